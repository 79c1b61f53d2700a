"""API shapes of the audit trail."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from ninja import Field, Schema

from audit.chain import format_time
from audit.models import AuditEvent


class AuditFilters(Schema):
    actor: str | None = None
    action: str | None = None
    object_type: str | None = None
    object_id: str | None = None
    since: datetime | None = Field(None, description="events at or after (ISO 8601; UTC if naive)")
    until: datetime | None = Field(None, description="events before (ISO 8601; UTC if naive)")


class ExportFormat(Schema):
    format: Literal["jsonl", "csv"] = "jsonl"


class AuditEventOut(Schema):
    seq: int
    at: str = Field(description="UTC, ISO 8601 with microseconds: the form that is hashed")
    actor: str
    action: str
    object_type: str
    object_id: str
    payload: dict[str, Any]
    prev_hash: str
    hash: str

    @staticmethod
    def resolve_at(event: AuditEvent) -> str:
        return format_time(event.at)


class VerificationOut(Schema):
    ok: bool
    verified_through: int
    broken_at: int | None
    reason: str
