"""Audit exports, streamed row by row: JSON Lines and CSV with the same columns.

Each JSON line is ``AuditEvent.as_record()`` in canonical JSON. CSV has the columns
``seq, at, actor, action, object_type, object_id, payload, prev_hash, hash`` with
``payload`` as canonical JSON text, so both formats carry everything needed to recompute
every hash (audit.chain).
"""

from __future__ import annotations

import csv
from collections.abc import Iterator

from django.db.models import QuerySet

from audit import chain
from audit.models import COLUMNS, AuditEvent

CHUNK = 2000


def jsonl_lines(events: QuerySet[AuditEvent]) -> Iterator[str]:
    for event in events.iterator(chunk_size=CHUNK):
        yield chain.canonical_json(event.as_record()) + "\n"


class _Line:
    """A file-like object whose write() returns what it was given (csv writes one row)."""

    def write(self, value: str) -> str:
        return value


def csv_lines(events: QuerySet[AuditEvent]) -> Iterator[str]:
    writer = csv.writer(_Line(), lineterminator="\n")
    yield writer.writerow(COLUMNS)
    for event in events.iterator(chunk_size=CHUNK):
        record = event.as_record()
        record["payload"] = chain.canonical_json(record["payload"])
        yield writer.writerow([record[column] for column in COLUMNS])
