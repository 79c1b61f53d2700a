"""The audit chain's hash, defined exactly, so that anyone can verify an export.

For each event::

    canonical = JSON of {"action", "actor", "at", "object_id", "object_type", "payload", "seq"}
    hash      = lowercase hex SHA-256 of the ASCII bytes of (prev_hash + canonical)

where JSON means Python's ``json.dumps(value, sort_keys=True, separators=(",", ":"),
ensure_ascii=True, allow_nan=False)``: keys sorted, no whitespace, non-ASCII characters
as ``\\uXXXX`` escapes, so the text is pure ASCII. ``seq`` is an integer; ``at`` is the
time in UTC as ISO 8601 with microseconds, ``2025-01-31T09:05:00.250000+00:00``;
``actor``, ``action``, ``object_type``, ``object_id`` are strings; ``payload`` is the
(already redacted) JSON object. ``prev_hash`` is the previous event's hash, and for the
first event (seq 1) sixty-four zeros. Both hashes are 64 characters, so the
concatenation is unambiguous. The stored ``payload`` column holds exactly the canonical
JSON of the payload, so a row's hash can be recomputed from its columns alone.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any
from uuid import UUID

GENESIS_HASH = "0" * 64


def canonical_json(value: Any) -> str:
    return json.dumps(
        value,
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=True,
        allow_nan=False,
        default=_jsonable,
    )


def format_time(at: datetime) -> str:
    if at.tzinfo is None:
        raise ValueError("audit times must be timezone-aware")
    return at.astimezone(UTC).isoformat(timespec="microseconds")


def event_hash(
    *,
    prev_hash: str,
    seq: int,
    at: datetime,
    actor: str,
    action: str,
    object_type: str,
    object_id: str,
    payload: Any,
) -> str:
    canonical = canonical_json(
        {
            "seq": seq,
            "at": format_time(at),
            "actor": actor,
            "action": action,
            "object_type": object_type,
            "object_id": object_id,
            "payload": payload,
        }
    )
    return hashlib.sha256((prev_hash + canonical).encode("ascii")).hexdigest()


def _jsonable(value: Any) -> Any:
    """Values json cannot write natively, as callers most likely mean them."""
    if isinstance(value, datetime):
        return format_time(value) if value.tzinfo else value.isoformat()
    if isinstance(value, date | UUID | Decimal):
        return str(value)
    if isinstance(value, set | frozenset):
        return sorted(value, key=repr)
    raise TypeError(f"audit payloads hold JSON values, not {type(value).__name__}")
