"""The plans router: plans, versions, compile, review, diff, export, and the tool catalogue.

Reads need ``plan.view`` (``tool.view`` for /tools), creating a plan ``plan.create``, a
new version ``plan.edit``, compiling ``plan.compile``, approving and rejecting
``plan.approve`` (never of one's own version), refreshing the MCP tools ``tool.manage``.
Writes go through ``plans.services``. The calls that compile a plan or ask the planner
count against ``FORGE_API_COMPILE_RATE`` as well as ``FORGE_API_RATE`` (accounts.throttling).

No ``from __future__ import annotations`` here: ninja reads the operations' annotations
at runtime, and ``@paginate`` hides this module's names from string annotations.
"""

from typing import Annotated, Any

from django.db.models import Prefetch, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404
from ninja import Path, Query, Router, Status
from ninja.pagination import paginate

from accounts.permissions import require_permission
from accounts.throttling import EXPENSIVE
from forge.ids import MAX_ID
from plans import catalogue, compilation, generation, planning, services
from plans.documents import Received, read_document
from plans.errors import UnknownVersion
from plans.models import Approval, Plan, PlannerProposal, PlanVersion
from plans.schemas import (
    MAX_NUMBER,
    ApprovalOut,
    CompileOut,
    DecisionIn,
    DecisionOut,
    DiffOut,
    DiffQuery,
    DocumentIn,
    ExportQuery,
    GenerateIn,
    PlanDetailOut,
    PlanFilters,
    PlanIn,
    PlanOut,
    ProposalOut,
    ToolOut,
    ToolServerOut,
    VersionIn,
    VersionOut,
    VersionSummaryOut,
)

router = Router(tags=["plans"])

PlanId = Annotated[int, Path(ge=1, le=MAX_ID, example=1)]
Number = Annotated[int, Path(ge=1, le=MAX_NUMBER, example=1)]

EXPORT_TYPES = {
    "json": ("application/json", "json"),
    "yaml": ("application/yaml; charset=utf-8", "yaml"),
    "mermaid": ("text/vnd.mermaid; charset=utf-8", "mmd"),
    "dot": ("text/vnd.graphviz; charset=utf-8", "dot"),
}
# Lists leave out what only a version's own page needs.
_HEAVY = ("document", "diagnostics", "performed_side_effects", "layout")


# --- Plans ------------------------------------------------------------------------------


@router.post("/plans", response={201: PlanDetailOut}, throttle=EXPENSIVE)
@require_permission("plan.create")
def create_plan(request: HttpRequest, body: PlanIn) -> Status:
    """Import a plan: version 1 is compiled and saved with its diagnostics, even errors."""
    received = _read(body)
    version = services.create_plan(
        request.auth, body.name, received.document, source_format=received.format,
        note=body.note, submit=body.submit, import_warnings=received.warnings,
    )  # fmt: skip
    return Status(201, _plan_detail(version.plan_id))


@router.post("/plans/generate", response={202: ProposalOut}, throttle=EXPENSIVE)
@require_permission("plan.create")
def generate_plan(request: HttpRequest, body: GenerateIn) -> Status:
    """Ask the deployment's planner (``FORGE_PLANNER``) for a plan for ``goal``. Answers
    at once (202) with the proposal, ``working``: a worker asks the planner, and
    ``GET /plans/proposals/{id}`` says how far it got (``attempt`` of ``max_attempts``,
    ``progress`` in words, ``elapsed_seconds``). An answer that does not compile goes back
    to the planner with its diagnostics, up to ``FORGE_PLANNER_ATTEMPTS``. What it
    proposes becomes version 1 of a new plan, your ``draft`` (``editor`` opens it): you
    submit it for review. A planner that gives no plan ends the proposal ``failed`` with
    the model's code. 503 ``planner_not_configured`` without a planner."""
    row = generation.start(
        request.auth, body.goal, context=body.context, constraints=body.constraints,
        name=body.name,
    )  # fmt: skip
    return Status(202, planning.proposal_data(_proposals().get(pk=row.pk)))


@router.get("/plans/proposals/{proposal_id}", response=ProposalOut)
@require_permission("plan.view")
def get_proposal(request: HttpRequest, proposal_id: PlanId) -> dict[str, Any]:
    """A planner's transcript: what it was asked and answered, attempt by attempt, and
    while it works how far it got. Another person's request is theirs (403
    ``not_your_proposal``) until it made a version."""
    row = get_object_or_404(_proposals(), pk=proposal_id)
    return planning.proposal_data(generation.readable(row, request.auth))


@router.post("/plans/proposals/{proposal_id}/cancel", response=ProposalOut)
@require_permission("plan.create")
def cancel_proposal(request: HttpRequest, proposal_id: PlanId) -> dict[str, Any]:
    """Stop the planner working on your request: between attempts, and an answer still
    on its way is discarded; no version is saved. 403 ``not_your_proposal`` for another
    person's, 409 ``proposal_finished`` once the planner answered."""
    row = get_object_or_404(_proposals(), pk=proposal_id)
    return planning.proposal_data(generation.cancel(row, request.auth))


@router.get("/plans", response=list[PlanOut])
@require_permission("plan.view")
@paginate
def list_plans(request: HttpRequest, filters: Query[PlanFilters]) -> Any:
    """Plans, newest first, with their latest version."""
    plans = _plans()
    if filters.q:
        plans = plans.filter(name__icontains=filters.q)
    if filters.status:
        plans = plans.filter(latest_version__status=filters.status)
    return plans


@router.get("/plans/{plan_id}", response=PlanDetailOut)
@require_permission("plan.view")
def get_plan(request: HttpRequest, plan_id: PlanId) -> Plan:
    """The plan with its latest version in full: document, diagnostics, approvals."""
    return _plan_detail(plan_id)


# --- Versions ---------------------------------------------------------------------------


@router.get("/plans/{plan_id}/versions", response=list[VersionSummaryOut])
@require_permission("plan.view")
@paginate
def list_versions(request: HttpRequest, plan_id: PlanId) -> Any:
    """The plan's versions, newest first."""
    plan = get_object_or_404(Plan, pk=plan_id)
    return _versions().filter(plan=plan).defer(*_HEAVY).order_by("-number")


@router.get("/plans/{plan_id}/versions/{n}", response=VersionOut)
@require_permission("plan.view")
def get_version(request: HttpRequest, plan_id: PlanId, n: Number) -> PlanVersion:
    """One version: document, diagnostics, approvals, performed side effects."""
    return _version(plan_id, n)


@router.post("/plans/{plan_id}/versions", response={201: VersionOut}, throttle=EXPENSIVE)
@require_permission("plan.edit")
def create_version(request: HttpRequest, plan_id: PlanId, body: VersionIn) -> Status:
    """Save an edited document as the next version (from ``parent``, else the latest)."""
    plan = get_object_or_404(Plan, pk=plan_id)
    parent = None if body.parent is None else _named_version(plan.pk, body.parent)
    received = _read(body)
    version = services.create_version(
        plan, request.auth, received.document, parent=parent, source_format=received.format,
        note=body.note, replan_reason=body.replan_reason, submit=body.submit,
        layout=body.layout.positions if body.layout else None,
        import_warnings=received.warnings,
    )  # fmt: skip
    return Status(201, _version(plan.pk, version.number))


@router.post("/plans/{plan_id}/versions/{n}/approve", response=DecisionOut)
@require_permission("plan.approve")
def approve_version(request: HttpRequest, plan_id: PlanId, n: Number, body: DecisionIn) -> Any:
    """Approve a submitted version without compile errors (403 for its author). Under
    approval rules the approval may count without being enough: ``version_status`` stays
    ``awaiting_approval`` and ``waiting_for`` says what the rules still lack."""
    return services.approve(_version(plan_id, n), request.auth, body.comment)


@router.post("/plans/{plan_id}/versions/{n}/reject", response=ApprovalOut)
@require_permission("plan.approve")
def reject_version(request: HttpRequest, plan_id: PlanId, n: Number, body: DecisionIn) -> Any:
    """Reject a submitted version (403 for its author)."""
    return services.reject(_version(plan_id, n), request.auth, body.comment)


@router.get("/plans/{plan_id}/diff", response=DiffOut, by_alias=True)
@require_permission("plan.view")
def diff(request: HttpRequest, plan_id: PlanId, query: Query[DiffQuery]) -> dict[str, Any]:
    """Steps and edges added, removed and changed from version ``from`` to ``to``."""
    plan = get_object_or_404(Plan, pk=plan_id)
    old, new = _named_version(plan.pk, query.from_), _named_version(plan.pk, query.to)
    changes = services.diff_versions(old, new, request.auth)
    return {"plan": plan.pk, "from": old.number, "to": new.number, **changes}


_EXPORT_DOC = {
    "responses": {
        200: {
            "description": "the document as a file in the format asked for",
            "content": {media.split(";")[0]: {} for media, _ in EXPORT_TYPES.values()},
        }
    }
}


@router.get("/plans/{plan_id}/versions/{n}/export", response={200: None}, openapi_extra=_EXPORT_DOC)
@require_permission("plan.view")
def export(request: HttpRequest, plan_id: PlanId, n: Number, query: Query[ExportQuery]) -> Any:
    """The version's document as JSON, YAML, Mermaid or DOT text (a file, not JSON-wrapped)."""
    version = _version(plan_id, n)
    text = services.export_version(version, request.auth, query.format)
    content_type, extension = EXPORT_TYPES[query.format]
    response = HttpResponse(text, content_type=content_type)
    filename = f"plan-{version.plan_id}-v{version.number}.{extension}"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


# --- Compile and tools ------------------------------------------------------------------


@router.post("/compile", response=CompileOut, throttle=EXPENSIVE)
@require_permission("plan.compile")
def compile_plan(request: HttpRequest, body: DocumentIn) -> HttpResponse:
    """Compile a document with this deployment's tools and policy; nothing is saved. What
    reading Mermaid source warns of (``flattened_decision``) is among the diagnostics."""
    received = _read(body)
    # The core's to_data is CompileOut already; ninja's validation of it object by object
    # cost a fifth of the request for a 500-step plan (bench.api_compile), so it is sent
    # as is. The tests assert this answer's exact JSON.
    data = compilation.compile_document(received.document).noting(received.warnings).to_data()
    return JsonResponse(data, content_type="application/json; charset=utf-8")


@router.get("/tools", response=list[ToolOut])
@require_permission("tool.view")
@paginate
def list_tools(request: HttpRequest) -> list[dict[str, Any]]:
    """The tool catalogue with each tool's schema, scope, side effect and policy."""
    return catalogue.tool_catalogue()


@router.get("/tools/servers", response=list[ToolServerOut])
@require_permission("tool.view")
def list_tool_servers(request: HttpRequest) -> list[dict[str, Any]]:
    """The MCP servers of ``FORGE_MCP_SERVERS``: whether each answered when this process
    last asked (every ``FORGE_MCP_REFRESH_SECONDS``), why not, and its tools."""
    return catalogue.tool_servers()


@router.post("/tools/refresh", response=list[ToolServerOut])
@require_permission("tool.manage")
def refresh_tools(request: HttpRequest) -> list[dict[str, Any]]:
    """Ask every MCP server for its tools now (this web process; workers refresh on their
    own schedule), restarting those that stopped; audited as ``tools.refreshed``."""
    return [catalogue.server_entry(status) for status in services.refresh_tools(request.auth)]


# --- Helpers ----------------------------------------------------------------------------


def _proposals() -> QuerySet[PlannerProposal]:
    return PlannerProposal.objects.select_related("requested_by", "version")


def _read(body: DocumentIn) -> Received:
    return read_document(document=body.document, source=body.source, format=body.format)


def _versions() -> QuerySet[PlanVersion]:
    # Of the parent and of the version that superseded it, only the number is shown.
    heavy = tuple(f"{link}__{name}" for link in ("parent", "superseded_by") for name in _HEAVY)
    return PlanVersion.objects.select_related("author", "parent", "superseded_by").defer(*heavy)


def _plans() -> QuerySet[Plan]:
    latest = tuple(f"latest_version__{name}" for name in _HEAVY)
    links = ("parent", "superseded_by")
    linked = tuple(f"latest_version__{link}__{name}" for link in links for name in _HEAVY)
    related = ("created_by", "latest_version__author", *(f"latest_version__{n}" for n in links))
    return Plan.objects.select_related(*related).defer(*latest, *linked)


def _plan_detail(plan_id: int) -> Plan:
    plan = get_object_or_404(Plan.objects.select_related("created_by"), pk=plan_id)
    if plan.latest_version_id is None:  # only inside the transaction that creates it
        raise Http404
    plan.latest_version = _version(plan.pk, None, pk=plan.latest_version_id)
    return plan


def _version(plan_id: int, number: int | None, **lookup: Any) -> PlanVersion:
    if number is not None:
        lookup["number"] = number
    approvals = Prefetch("approvals", Approval.objects.select_related("reviewer"))
    return get_object_or_404(_versions().prefetch_related(approvals), plan_id=plan_id, **lookup)


def _named_version(plan_id: int, number: int) -> PlanVersion:
    try:
        return _versions().get(plan_id=plan_id, number=number)
    except PlanVersion.DoesNotExist:
        raise UnknownVersion(f"plan {plan_id} has no version {number}") from None
