"""API shapes of the audit trail."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from ninja import Field, Schema
from pydantic import AfterValidator

from audit.chain import format_time
from audit.models import AuditEvent
from audit.visibility import payload_for


def _no_nul(value: str | None) -> str | None:
    # PostgreSQL text cannot hold NUL: such a filter would be a database error, not a 422.
    if value is not None and "\x00" in value:
        raise ValueError("may not contain NUL characters")
    return value


def _utc(moment: datetime | None) -> datetime | None:
    # Python accepts UTC offsets up to 23:59, PostgreSQL up to 15:59: compare in UTC.
    if moment is None or moment.tzinfo is None:
        return moment
    try:
        return moment.astimezone(UTC)
    except OverflowError:
        raise ValueError("out of range once converted to UTC") from None


Filter = Annotated[str | None, AfterValidator(_no_nul)]
Moment = Annotated[datetime | None, AfterValidator(_utc)]


Excluded = Annotated[str, AfterValidator(_no_nul), Field(max_length=200)]


class AuditFilters(Schema):
    """Filters of the trail. Actors, actions, object types and ids match without regard
    to case; ``exclude_actor`` and ``exclude_action`` may repeat (``?exclude_action=
    user.logged_in&exclude_action=user.logged_out`` leaves logins out)."""

    actor: Filter = None
    action: Filter = None
    object_type: Filter = None
    object_id: Filter = None
    exclude_actor: list[Excluded] = Field(default_factory=list, max_length=50)
    exclude_action: list[Excluded] = Field(default_factory=list, max_length=50)
    since: Moment = Field(None, description="events at or after (ISO 8601; UTC if naive)")
    until: Moment = Field(None, description="events before (ISO 8601; UTC if naive)")


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

    @staticmethod
    def resolve_payload(event: AuditEvent, context: Any) -> Any:
        # An auditor reads the trail without plan arguments (audit.visibility).
        request = (context or {}).get("request")
        return payload_for(getattr(request, "auth", None), event.payload)


class AuditValuesOut(Schema):
    actors: list[str] = Field(description="every actor in the trail")
    actions: list[str] = Field(description="every action in the trail")
    object_types: list[str] = Field(description="every object type in the trail")


class VerificationOut(Schema):
    ok: bool
    verified_through: int = Field(description="the last seq found intact; 0 if none")
    broken_at: int | None = Field(description="the first seq that fails; null if none does")
    reason: str
    code: str = Field(
        description="what failed, '' when ok: rows_missing, link_broken, hash_mismatch, "
        "truncated, rehashed, anchor_invalid, anchor_chain_broken, anchor_log_unreadable, "
        "anchors_missing, "
        "anchor_log_replaced, row_missing, row_changed; not_verified before any walk"
    )
    checked_at: str | None = Field(
        description="when the walk started: UTC, ISO 8601 with microseconds; null before any"
    )
