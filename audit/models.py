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
            models.Index(fields=["at"], name="audit_at"),
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
