"""The hash-chained, append-only audit trail."""
