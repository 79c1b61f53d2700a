"""Step and run statuses of SPEC section 5, and which of them are final."""

from __future__ import annotations

from typing import Literal

__all__ = [
    "FINAL_RUN_STATUSES",
    "RUN_STATUSES",
    "SETTLED_STEP_STATUSES",
    "STEP_STATUSES",
    "RunStatus",
    "StepStatus",
]

StepStatus = Literal[
    "pending",
    "ready",
    "awaiting_approval",
    "running",
    "succeeded",
    "failed",
    "invalid",
    "reset",
    "needs_reconciliation",
    "skipped",
    "cancelled",
]
RunStatus = Literal[
    "queued",
    "running",
    "awaiting_approval",
    "needs_replan",
    "succeeded",
    "failed",
    "budget_exhausted",
    "cancelled",
]

STEP_STATUSES: tuple[StepStatus, ...] = StepStatus.__args__  # type: ignore[attr-defined]
RUN_STATUSES: tuple[RunStatus, ...] = RunStatus.__args__  # type: ignore[attr-defined]

# A run in one of these statuses admits nothing more (needs_replan waits for a resume).
FINAL_RUN_STATUSES: frozenset[RunStatus] = frozenset(
    {"succeeded", "failed", "budget_exhausted", "cancelled"}
)
# Steps in these statuses will not move again unless a person or a replan moves them.
SETTLED_STEP_STATUSES: frozenset[StepStatus] = frozenset(
    {"succeeded", "failed", "invalid", "skipped", "cancelled", "needs_reconciliation"}
)
