"""Audit exports, streamed row by row: JSON Lines and CSV with the same columns.

Each JSON line is ``AuditEvent.as_record()`` in canonical JSON. CSV has the columns
``seq, at, actor, action, object_type, object_id, payload, prev_hash, hash`` with
``payload`` as canonical JSON text, so both formats carry everything needed to recompute
every hash (audit.chain), except for a reader who may not see plan arguments (an
auditor): their payloads come without them (audit.visibility), and a JSON line whose
payload lost something says ``"payload_redacted": true``.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from typing import Any

from django.db.models import QuerySet

from audit import chain
from audit.models import COLUMNS, AuditEvent
from audit.visibility import without_arguments

CHUNK = 2000


def jsonl_lines(events: QuerySet[AuditEvent], *, hide_arguments: bool = False) -> Iterator[str]:
    for event in events.iterator(chunk_size=CHUNK):
        yield chain.canonical_json(_record(event, hide_arguments)) + "\n"


def _record(event: AuditEvent, hide_arguments: bool) -> dict[str, Any]:
    """The event's record; without plan arguments for a reader who may not see them
    (audit.visibility), then marked ``payload_redacted``: its hash no longer matches."""
    record = event.as_record()
    if hide_arguments:
        record["payload"], hidden = without_arguments(record["payload"])
        if hidden:
            record["payload_redacted"] = True
    return record


class _Line:
    """A file-like object whose write() returns what it was given (csv writes one row)."""

    def write(self, value: str) -> str:
        return value


def csv_lines(events: QuerySet[AuditEvent], *, hide_arguments: bool = False) -> Iterator[str]:
    writer = csv.writer(_Line(), lineterminator="\n")
    yield writer.writerow(COLUMNS)
    for event in events.iterator(chunk_size=CHUNK):
        record = _record(event, hide_arguments)
        record["payload"] = chain.canonical_json(record["payload"])
        yield writer.writerow([record[column] for column in COLUMNS])
