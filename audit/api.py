"""The audit router: list, export and verify the trail, and list the values filters pick
from. Reading needs ``audit.view`` (every role); an auditor reads payloads without plan
arguments (audit.visibility); walking the whole chain (``POST /audit/verify``) needs
``audit.verify`` (operators, auditors and admins) and passes through ``audit.walk_lock``.

No ``from __future__ import annotations`` here: ninja reads the operations' annotations
at runtime, and ``@paginate`` hides this module's names from string annotations.
"""

from dataclasses import asdict
from datetime import datetime
from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, StreamingHttpResponse
from django.utils import timezone
from ninja import Query, Router
from ninja.pagination import paginate

from audit import exports, services, vocabulary
from audit.chain import format_time
from audit.schemas import (
    AuditEventOut,
    AuditFilters,
    AuditValuesOut,
    ExportFormat,
    VerificationOut,
)
from audit.visibility import shows_arguments

router = Router(tags=["audit"])

READ_PERMISSION = "audit.view"
VERIFY_PERMISSION = "audit.verify"


def _ensure(request: HttpRequest, permission: str) -> None:
    # audit may not import accounts (sibling floors), so it asks the user model itself:
    # settings.AUTH_USER_MODEL provides can(permission), see accounts.roles.
    if not request.auth.can(permission):  # type: ignore[attr-defined]
        raise PermissionDenied(request.auth.refusal(permission))  # type: ignore[union-attr]


def _ensure_reader(request: HttpRequest) -> None:
    _ensure(request, READ_PERMISSION)


@router.get("/audit", response=list[AuditEventOut])
@paginate
def list_events(request: HttpRequest, filters: Query[AuditFilters]) -> Any:
    """Events, newest first, filtered by actor, action, object and time."""
    _ensure_reader(request)
    return services.events(**filters.model_dump()).order_by("-seq")


@router.get("/audit/export", response={200: None})
def export_events(
    request: HttpRequest, filters: Query[AuditFilters], output: Query[ExportFormat]
) -> StreamingHttpResponse:
    """The filtered events in seq order as a streamed JSON Lines or CSV file."""
    _ensure_reader(request)
    events = services.events(**filters.model_dump())
    hide = not shows_arguments(request.auth)
    stamp = timezone.now().strftime("%Y%m%dT%H%M%SZ")
    if output.format == "csv":
        response = StreamingHttpResponse(
            exports.csv_lines(events, hide_arguments=hide), content_type="text/csv"
        )
    else:
        response = StreamingHttpResponse(
            exports.jsonl_lines(events, hide_arguments=hide), content_type="application/x-ndjson"
        )
    response["Content-Disposition"] = f'attachment; filename="forge-audit-{stamp}.{output.format}"'
    return response


@router.get("/audit/values", response=AuditValuesOut)
def existing_values(request: HttpRequest) -> dict[str, Any]:
    """The actors, actions and object types the trail holds, sorted without regard to
    case: what the filters can pick from."""
    _ensure_reader(request)
    return vocabulary.vocabulary().as_dict()


@router.get("/audit/verify", response=VerificationOut)
def last_verification(request: HttpRequest) -> dict[str, Any]:
    """The last full walk's verdict (or a break a later check found), as stored: this
    walks nothing. ``code`` is ``not_verified`` before the first walk."""
    _ensure_reader(request)
    last = services.last_verification()
    return {**asdict(last.verification), "checked_at": _time(last.checked_at)}


@router.post("/audit/verify", response=VerificationOut)
def verify_chain(request: HttpRequest) -> dict[str, Any]:
    """Walk the whole chain now and check it against the anchor log; ``broken_at`` names
    the first row that fails. One walk at a time: 409 ``verify_running`` while another
    runs, 429 ``verify_throttled`` within ``FORGE_AUDIT_VERIFY_INTERVAL`` of the last
    (both with ``Retry-After``). The verdict is kept for ``GET`` and the audit page."""
    _ensure(request, VERIFY_PERMISSION)
    result = services.walk_now(request.auth.get_username())  # type: ignore[attr-defined]
    walk = services.latest_full_walk()
    return {**asdict(result), "checked_at": _time(walk.checked_at if walk is not None else None)}


def _time(moment: datetime | None) -> str | None:
    return None if moment is None else format_time(moment)
