"""The audit router: list, export and verify the trail (needs the audit.view permission).

No ``from __future__ import annotations`` here: ninja reads the operations' annotations
at runtime, and ``@paginate`` hides this module's names from string annotations.
"""

from dataclasses import asdict
from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, StreamingHttpResponse
from django.utils import timezone
from ninja import Query, Router
from ninja.pagination import paginate

from audit import exports, services
from audit.schemas import AuditEventOut, AuditFilters, ExportFormat, VerificationOut

router = Router(tags=["audit"])

READ_PERMISSION = "audit.view"


def _ensure_reader(request: HttpRequest) -> None:
    # audit may not import accounts (sibling floors), so it asks the user model itself:
    # settings.AUTH_USER_MODEL provides can(permission), see accounts.roles.
    if not request.auth.can(READ_PERMISSION):  # type: ignore[attr-defined]
        raise PermissionDenied(f"This needs the {READ_PERMISSION} permission")


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
    stamp = timezone.now().strftime("%Y%m%dT%H%M%SZ")
    if output.format == "csv":
        response = StreamingHttpResponse(exports.csv_lines(events), content_type="text/csv")
    else:
        response = StreamingHttpResponse(
            exports.jsonl_lines(events), content_type="application/x-ndjson"
        )
    response["Content-Disposition"] = f'attachment; filename="forge-audit-{stamp}.{output.format}"'
    return response


@router.get("/audit/verify", response=VerificationOut)
def verify_chain(request: HttpRequest) -> dict[str, Any]:
    """Walk the whole chain; ``broken_at`` names the first row that fails. The outcome is
    kept as the audit page's latest full walk (``audit.models.ChainCheckpoint``)."""
    _ensure_reader(request)
    return asdict(services.verify_and_record())
