"""The append-only audit trail: one hash-chained row per decision (SPEC section 8).

Rows are written only by ``audit.services.record``. This layer refuses to change or
delete them (``save`` of an existing row, ``delete``, and the queryset's ``update``,
``delete``, ``bulk_update``, ``bulk_create`` raise ``AppendOnlyError``); on PostgreSQL a
trigger refuses UPDATE, DELETE and TRUNCATE as well (migration 0002), so raw SQL from
the application cannot either. Tampering that goes around both shows in ``verify()``.
"""

from __future__ import annotations

import json
from typing import Any, NoReturn

from django.db import models

from audit import chain


class AppendOnlyError(RuntimeError):
    """An attempt to change or delete audit events."""


class CanonicalJSONField(models.TextField):  # type: ignore[type-arg]
    """A JSON value stored as its canonical text (audit.chain), byte for byte.

    Not a JSONField: PostgreSQL's jsonb rewrites numbers (1e300 comes back as 1 followed
    by 300 zeros, -0.0 as 0.0), which would change the bytes a hash was computed over.
    """

    def from_db_value(self, value: str | None, expression: Any, connection: Any) -> Any:
        return None if value is None else json.loads(value)

    def to_python(self, value: Any) -> Any:
        return json.loads(value) if isinstance(value, str) else value

    def get_prep_value(self, value: Any) -> Any:
        return None if value is None else chain.canonical_json(value)

    def value_to_string(self, obj: models.Model) -> str:
        return chain.canonical_json(self.value_from_object(obj))


class AuditEventQuerySet(models.QuerySet["AuditEvent"]):
    def update(self, **kwargs: Any) -> NoReturn:
        raise AppendOnlyError("audit events are never updated")

    def delete(self) -> NoReturn:
        raise AppendOnlyError("audit events are never deleted")

    def bulk_update(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise AppendOnlyError("audit events are never updated")

    def bulk_create(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise AppendOnlyError("audit events are written one by one by audit.services.record")


class AuditEvent(models.Model):
    seq = models.BigIntegerField(primary_key=True, help_text="1, 2, 3, ... without gaps")
    at = models.DateTimeField()
    actor = models.CharField(max_length=200, help_text="a username, or '<kind>:<name>'")
    action = models.CharField(max_length=100, help_text="past tense: 'token.revoked'")
    object_type = models.CharField(max_length=100)
    object_id = models.CharField(max_length=200)
    payload = CanonicalJSONField(default=dict)
    prev_hash = models.CharField(max_length=64)
    hash = models.CharField(max_length=64)

    objects = AuditEventQuerySet.as_manager()

    class Meta:
        ordering = ["seq"]
        indexes = [
            models.Index(fields=["actor", "seq"], name="audit_actor_seq"),
            models.Index(fields=["action", "seq"], name="audit_action_seq"),
            models.Index(fields=["object_type", "object_id", "seq"], name="audit_object_seq"),
            # The audit page pages newest first by seq under any filter: each filter's
            # index ends with seq so that a page is a range scan, never a sort, and a
            # time filter turns into a seq range through (at, seq) (audit.browse).
            models.Index(fields=["object_type", "seq"], name="audit_type_seq"),
            models.Index(fields=["at", "seq"], name="audit_at_seq"),
        ]

    def __str__(self) -> str:
        return f"#{self.seq} {self.actor} {self.action} {self.object_type}:{self.object_id}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise AppendOnlyError("audit events are never updated")
        kwargs["force_insert"] = True
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise AppendOnlyError("audit events are never deleted")

    def expected_hash(self) -> str:
        """The hash this row must carry, from its own columns (audit.chain)."""
        return chain.event_hash(
            prev_hash=self.prev_hash,
            seq=self.seq,
            at=self.at,
            actor=self.actor,
            action=self.action,
            object_type=self.object_type,
            object_id=self.object_id,
            payload=self.payload,
        )

    def as_record(self) -> dict[str, Any]:
        """The row as exported: every column, ``at`` in the chain's own format."""
        return {
            "seq": self.seq,
            "at": chain.format_time(self.at),
            "actor": self.actor,
            "action": self.action,
            "object_type": self.object_type,
            "object_id": self.object_id,
            "payload": self.payload,
            "prev_hash": self.prev_hash,
            "hash": self.hash,
        }


class ChainCheckpoint(models.Model):
    """The outcome of one walk of the chain, kept so that pages need not walk it all.

    ``verify()`` is O(rows): a million events take seconds. The audit page therefore
    starts from the latest checkpoint: it checks that the row the checkpoint ended on
    still carries the hash it had, then walks only the rows after it (a bounded number
    per view) and stores how far it got. A full walk (by the page's "verify the whole
    chain" button, ``GET /api/v1/audit/verify`` or ``manage.py forge_audit_verify``)
    re-checks every row from seq 1; an edit to an old row that did
    not re-chain the rows after it shows only in a full walk, which is why the page
    names when the last one ran. Checkpoints are a cache of results, not evidence: the
    chain itself is.
    """

    FULL = "full"  # every row from seq 1, asked for (the page's button, the API, the command)
    INCREMENTAL = "incremental"  # the rows after the previous checkpoint, by a page view

    checked_at = models.DateTimeField()
    kind = models.CharField(
        max_length=12, choices=[(FULL, "full walk"), (INCREMENTAL, "incremental")]
    )
    from_seq = models.BigIntegerField(help_text="the first seq this walk checked")
    through_seq = models.BigIntegerField(help_text="the last seq found intact; 0: none")
    through_hash = models.CharField(max_length=64, blank=True, help_text="that row's hash")
    broken_at = models.BigIntegerField(null=True, blank=True, help_text="the first broken seq")
    reason = models.TextField(blank=True)
    code = models.CharField(
        max_length=40, blank=True, help_text="what failed (audit.services.Verification); '' if ok"
    )
    rows = models.BigIntegerField(help_text="rows this walk read")
    duration_ms = models.FloatField()

    class Meta:
        ordering = ["-id"]

    def __str__(self) -> str:
        state = f"broken at {self.broken_at}" if self.broken_at else "ok"
        return f"checkpoint {self.pk}: {state} through {self.through_seq}"

    @property
    def ok(self) -> bool:
        return self.broken_at is None and not self.code

    @property
    def full(self) -> bool:
        return self.kind == self.FULL


class AnchorReceipt(models.Model):
    """The database's note of an anchor it appended to the anchor log (audit.anchors).

    The log lives outside the database so that rows deleted from the database are caught
    by it; these notes catch the opposite: a log deleted or cut short. ``verify`` checks
    that the newest note's anchor is still in the log with the same digest. Each note is
    written after its anchor, so the log is never behind its notes but by tampering.
    """

    n = models.BigIntegerField(unique=True, help_text="the anchor's place in the log, from 1")
    seq = models.BigIntegerField(help_text="the chain head it anchored")
    hash = models.CharField(max_length=64)
    digest = models.CharField(max_length=64, help_text="SHA-256 of the anchor's line")
    written_at = models.DateTimeField()

    class Meta:
        ordering = ["-n"]

    def __str__(self) -> str:
        return f"anchor {self.n}: seq {self.seq}"


class WalkLock(models.Model):
    """One row (pk 1) that lets one full walk of the chain run at a time, across processes,
    and not more often than ``FORGE_AUDIT_VERIFY_INTERVAL`` (audit.walk_lock).

    It is taken by a compare-and-swap on ``turn``, not by holding a lock for the walk:
    on SQLite a write lock held for a walk's 30 seconds would stop every other writer.
    A walk whose process died frees the gate when ``expires_at`` passes.
    """

    turn = models.BigIntegerField(default=0, help_text="incremented by every claim and release")
    holder = models.CharField(max_length=200, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True, help_text="set while a walk runs")

    def __str__(self) -> str:
        return f"walk gate, turn {self.turn}"


# The columns of an event, in the order exports write them and bulk loads insert them.
COLUMNS = (
    "seq",
    "at",
    "actor",
    "action",
    "object_type",
    "object_id",
    "payload",
    "prev_hash",
    "hash",
)
