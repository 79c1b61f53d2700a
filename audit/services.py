"""The audit trail's only writer, ``record``, and its reader ``verify``.

``record`` belongs inside the caller's ``transaction.atomic()``, next to the change it
describes, so that the audit row commits or rolls back with that change. Writers are
serialised so that ``seq`` has no gaps and each row links to the one before it: on
PostgreSQL by a transaction-level advisory lock (held until the caller's transaction
ends, so the next writer reads the row this one wrote); on SQLite by the write lock
that Forge's IMMEDIATE transactions take at BEGIN. On any other database a race would
collide on the ``seq`` primary key: an IntegrityError, never a forked chain.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.db import connections, router, transaction
from django.db.models import QuerySet
from django.utils import timezone

from audit import chain
from audit.models import AuditEvent
from audit.redaction import redact

# pg_advisory_xact_lock takes a bigint; this one is derived from a name so that it is
# unlikely to collide with a lock anyone else takes.
ADVISORY_LOCK_KEY = int.from_bytes(hashlib.sha256(b"forge.audit.chain").digest()[:8], signed=True)

VERIFY_CHUNK = 2000


def record(
    actor: str,
    action: str,
    object_type: str,
    object_id: object,
    payload: dict[str, Any] | None = None,
) -> AuditEvent:
    """Append one event to the chain and return it. ``payload`` is redacted first."""
    if payload is not None and not isinstance(payload, dict):
        raise TypeError("an audit payload is a dict")
    # Stored exactly as hashed: what json can write, after redaction, normalised.
    clean = json.loads(chain.canonical_json(redact(payload or {})))
    using = router.db_for_write(AuditEvent)
    with transaction.atomic(using=using):
        connection = connections[using]
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_xact_lock(%s)", [ADVISORY_LOCK_KEY])
        last = AuditEvent.objects.using(using).order_by("-seq").values_list("seq", "hash").first()
        seq, prev_hash = (last[0] + 1, last[1]) if last else (1, chain.GENESIS_HASH)
        event = AuditEvent(
            seq=seq,
            at=timezone.now(),
            actor=str(actor),
            action=str(action),
            object_type=str(object_type),
            object_id=str(object_id),
            payload=clean,
            prev_hash=prev_hash,
        )
        event.hash = event.expected_hash()
        event.save(using=using)
    return event


@dataclass(frozen=True)
class Verification:
    ok: bool
    verified_through: int  # the last seq whose link and hash check out; 0 if none
    broken_at: int | None  # the first seq that does not, or None
    reason: str = ""


def verify() -> Verification:
    """Walk the whole chain in seq order, in chunks, and name the first broken row."""
    expected_seq, prev_hash = 1, chain.GENESIS_HASH
    fields = ("seq", "at", "actor", "action", "object_type", "object_id", "payload")
    rows = AuditEvent.objects.order_by("seq").values_list(*fields, "prev_hash", "hash")
    for *values, stored_prev, stored_hash in rows.iterator(chunk_size=VERIFY_CHUNK):
        event = dict(zip(fields, values, strict=True))
        seq = event["seq"]
        reason = ""
        if seq != expected_seq:
            reason = f"seq {seq} follows seq {expected_seq - 1}: rows are missing"
        elif stored_prev != prev_hash:
            reason = f"prev_hash does not match the hash of seq {seq - 1}"
        elif stored_hash != chain.event_hash(prev_hash=prev_hash, **event):
            reason = "hash does not match the row's content"
        if reason:
            return Verification(False, expected_seq - 1, seq, reason)
        expected_seq, prev_hash = seq + 1, stored_hash
    return Verification(True, expected_seq - 1, None)


def events(
    *,
    actor: str | None = None,
    action: str | None = None,
    object_type: str | None = None,
    object_id: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> QuerySet[AuditEvent]:
    """Events matching every filter given, in seq order. ``since`` inclusive, ``until`` not."""
    queryset = AuditEvent.objects.order_by("seq")
    exact = {"actor": actor, "action": action, "object_type": object_type, "object_id": object_id}
    queryset = queryset.filter(**{field: value for field, value in exact.items() if value})
    if since is not None:
        queryset = queryset.filter(at__gte=_aware(since))
    if until is not None:
        queryset = queryset.filter(at__lt=_aware(until))
    return queryset


def _aware(moment: datetime) -> datetime:
    return moment if timezone.is_aware(moment) else timezone.make_aware(moment, UTC)
