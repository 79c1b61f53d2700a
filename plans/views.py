"""The plan pages: the list, the new-plan and import page, the editor, a version's page
with its review, the history and the diff view.

Pages read the models directly for lists and for the data the page's script starts from
(handed over with ``json_script``, never inlined as code); every change a page makes goes
through the API (``plans.api``) from the browser, so the pages hold no write logic. Each
view checks the permission its page needs: reading needs ``plan.view``, the editor
``plan.edit``, the new-plan page ``plan.create``.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.paginator import Paginator
from django.db.models import Max, Prefetch, QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET

from accounts.permissions import ensure_permission
from forge.ids import MAX_ID
from plans import planning
from plans.impact import impact_changes, impact_view, version_impact
from plans.models import Approval, Plan, PlannerProposal, PlanVersion, VersionStatus
from plans.rules import rules_view

PAGE_SIZE = 25
# The examples a new user can start from, in the order the new-plan page lists them.
EXAMPLES = (
    ("release-notes.yaml", "Release notes: files, a shell command, data between steps (YAML)"),
    ("replan/plan.yaml", "A contract that fails, to see a replan (YAML)"),
    ("agent/plan.yaml", "An agent step that chooses its own tool calls (YAML)"),
    (
        "agent-step-in-chinese.json",
        "An agent step written in Chinese, with a free-text done_when (JSON)",
    ),
    (
        "supplier-risk.yaml",
        "Every field of a step, commented (YAML; one step, its deliverable left out: "
        "an error on purpose)",
    ),
)
# The editor's status of a blank plan that has never been saved (never stored).
UNSAVED = "unsaved"
STATUS_LABELS = {
    VersionStatus.DRAFT: "Draft",
    VersionStatus.HAS_ERRORS: "Has errors",
    VersionStatus.AWAITING_APPROVAL: "Awaiting approval",
    VersionStatus.APPROVED: "Approved",
    VersionStatus.REJECTED: "Rejected",
    VersionStatus.CHANGES_REQUESTED: "Changes requested",
    VersionStatus.SUPERSEDED: "Superseded",
}
# A plan's latest version is never superseded: the list's status filter leaves it out.
LIST_STATUSES = [(k, v) for k, v in STATUS_LABELS.items() if k != VersionStatus.SUPERSEDED]


@require_GET
def plan_list(request: HttpRequest) -> HttpResponse:
    ensure_permission(request.user, "plan.view")
    q = request.GET.get("q", "").strip()[:200]
    status = request.GET.get("status", "")
    plans = Plan.objects.select_related(
        "created_by", "latest_version", "latest_version__author"
    ).defer(
        "latest_version__document",
        "latest_version__diagnostics",
        "latest_version__performed_side_effects",
    )
    plans = plans.order_by("-latest_version__created_at", "-pk")
    if q:
        plans = plans.filter(name__icontains=q)
    if status in dict(LIST_STATUSES):
        plans = plans.filter(latest_version__status=status)
    else:
        status = ""
    page = Paginator(plans, PAGE_SIZE).get_page(request.GET.get("page"))
    context = {
        "page": page,
        "rows": _list_rows(page),
        "q": q,
        "status": status,
        "statuses": LIST_STATUSES,
        "can_create": request.user.can("plan.create"),
    }
    return render(request, "plans/list.html", context)


def _list_rows(page: Any) -> list[dict[str, Any]]:
    """Each plan of ``page`` with its latest approved version (what may run) apart from
    its latest version (what is being worked on), so that a newer draft with errors never
    reads as the status of a plan whose approved version runs fine."""
    plans = list(page)
    approved = {
        row["plan_id"]: row["number"]
        for row in PlanVersion.objects.filter(
            plan_id__in=[plan.pk for plan in plans], status=VersionStatus.APPROVED
        )
        .values("plan_id")
        .annotate(number=Max("number"))
    }
    return [
        {
            "plan": plan,
            "approved": approved.get(plan.pk),
            "label": STATUS_LABELS.get(plan.latest_version.status, plan.latest_version.status)
            if plan.latest_version
            else "",
        }
        for plan in plans
    ]


@require_GET
def new_plan(request: HttpRequest) -> HttpResponse:
    ensure_permission(request.user, "plan.create")
    examples = []
    for filename, title in EXAMPLES:
        path = Path(settings.BASE_DIR) / "examples" / filename
        if path.is_file():
            fmt = "json" if path.suffix == ".json" else "yaml"
            examples.append(
                {"file": filename, "title": title, "format": fmt, "source": path.read_text()}
            )
    page_data = {
        "examples": examples,
        "api": _api_root(),
        "editor": _editor_url_template(),
        "draw": reverse("plans:draw"),
    }
    return render(request, "plans/new.html", {"page_data": page_data, "examples": examples})


@require_GET
def generate(request: HttpRequest) -> HttpResponse:
    """New plan from a goal: the deployment's planner proposes version 1, the asker's
    draft (the page's script posts ``/plans/generate``, then follows the proposal until
    the editor can open it); without ``FORGE_PLANNER`` the page says how to set one up.
    A planner script's goals are listed, to pick from."""
    ensure_permission(request.user, "plan.create")
    configured = planning.configured()
    page_data = {"api": _api_root(), "configured": configured}
    context = {"page_data": page_data, "configured": configured,
               "planner": settings.FORGE_PLANNER.strip(),
               "examples": planning.planner_examples() if configured else ()}  # fmt: skip
    return render(request, "plans/generate.html", context)


@require_GET
def plan_detail(request: HttpRequest, plan_id: int) -> HttpResponse:
    """A plan's address: its editor for those who may edit, else its latest version."""
    ensure_permission(request.user, "plan.view")
    plan = get_object_or_404(Plan, pk=plan_id)
    if request.user.can("plan.edit"):
        return redirect("plans:edit", plan_id=plan.pk)
    if plan.latest_version is None:
        raise Http404
    return redirect("plans:version", plan_id=plan.pk, number=plan.latest_version.number)


@require_GET
def edit(request: HttpRequest, plan_id: int) -> HttpResponse:
    ensure_permission(request.user, "plan.edit")
    plan = get_object_or_404(Plan.objects.select_related("created_by"), pk=plan_id)
    versions = _versions(plan)
    number = request.GET.get("version")
    if number:
        version = get_object_or_404(versions, number=_number(number))
    else:
        version = get_object_or_404(versions, pk=plan.latest_version_id)
    user = request.user
    replan = _replan(request.GET.get("from_run"), version)
    sent_back = review_decision(version)
    editor = {
        "plan": {"id": plan.pk, "name": plan.name},
        "version": _version_data(version, with_document=True),
        "user": {
            "username": user.get_username(),
            "can_approve": user.can("plan.approve"),
            "can_run": user.can("run.start"),
            "can_comment": user.can("review.comment"),
            "can_submit": user.can("plan.edit"),
        },
        "api": _api_root(),
        "urls": _plan_urls(plan),
        "replan": replan,
    }
    context = {
        "plan": plan,
        "version": version,
        "proposal": version_proposal(version),
        "own_draft": version.status == VersionStatus.DRAFT and version.author_id == user.pk,
        "status_label": STATUS_LABELS.get(version.status, version.status),
        "editor": editor,
        "replan": replan,
        "status_labels": STATUS_LABELS,
        "sent_back": sent_back,
    }
    return render(request, "plans/editor.html", context)


@require_GET
def draw(request: HttpRequest) -> HttpResponse:
    """The editor on a blank plan that is not saved yet (``?name=&goal=`` from the new-plan
    page): nothing is stored until the author saves, and the editor saves only a plan with
    at least one step, so a blank plan never becomes an erroring version 1. The first save
    creates the plan (``POST /api/v1/plans``) and opens its editor."""
    ensure_permission(request.user, "plan.create")
    goal = request.GET.get("goal", "").strip()[:2000]
    name = request.GET.get("name", "").strip()[:200] or goal[:200] or "Untitled plan"
    user = request.user
    editor = {
        "plan": {"id": None, "name": name},
        "version": {
            "number": 0,
            "status": UNSAVED,
            "status_label": "Not saved yet",
            "author": user.get_username(),
            "note": "",
            "parent": None,
            "has_errors": False,
            "submitted": False,
            "created_at": None,
            "document": {
                "schema": "forge.plan/v1",
                "goal": goal,
                "risk_level": "low",
                "max_replans": 3,
                "steps": [],
            },
            "diagnostics": [],
        },
        "user": {
            "username": user.get_username(),
            "can_approve": user.can("plan.approve"),
            "can_run": user.can("run.start"),
        },
        "api": _api_root(),
        "urls": {"created": _editor_url_template()},
        "replan": None,
    }
    context = {
        "plan": {"pk": None, "name": name},
        "version": None,
        "unsaved": True,
        "editor": editor,
        "replan": None,
    }
    return render(request, "plans/editor.html", context)


def _replan(from_run: str | None, version: PlanVersion) -> dict[str, Any] | None:
    """The editor's replan mode, opened from a run that needs a replan
    (``?version=N&from_run=RUN``): saving posts ``/runs/RUN/replans``, which makes the
    new version a replan of the run's current version carrying the side effects the run
    performed. Runs are a floor above plans, so the run is named here and checked by the
    page's script (``GET /runs/RUN``) and by the API when it saves."""
    if from_run is None:
        return None
    valid = from_run.isascii() and from_run.isdigit() and len(from_run) <= 19
    if not valid or not 1 <= int(from_run) <= MAX_ID:
        raise Http404("no such run")
    run_id = int(from_run)
    return {
        "run": run_id,
        "from_version": version.number,
        "endpoint": f"runs/{run_id}/replans",
        "run_url": reverse("runs:detail", kwargs={"run_id": run_id}),
    }


@require_GET
def history(request: HttpRequest, plan_id: int) -> HttpResponse:
    ensure_permission(request.user, "plan.view")
    plan = get_object_or_404(Plan.objects.select_related("created_by"), pk=plan_id)
    versions = list(_versions(plan).defer("document").order_by("-number"))
    rows = [{"version": version, "counts": _counts(version.diagnostics)} for version in versions]
    context = {
        "plan": plan,
        "rows": rows,
        "numbers": [version.number for version in versions],
        "default_from": versions[1].number if len(versions) > 1 else None,
        "default_to": versions[0].number if versions else None,
        "can_edit": request.user.can("plan.edit"),
    }
    return render(request, "plans/history.html", context)


@require_GET
def version_detail(request: HttpRequest, plan_id: int, number: int) -> HttpResponse:
    ensure_permission(request.user, "plan.view")
    plan = get_object_or_404(Plan.objects.select_related("created_by"), pk=plan_id)
    approvals = Prefetch("approvals", Approval.objects.select_related("reviewer"))
    version = get_object_or_404(_versions(plan).prefetch_related(approvals), number=number)
    user = request.user
    is_author = version.author_id == user.pk
    can_approve = user.can("plan.approve")
    superseded = _superseded(version)
    if superseded:
        review_block = (
            f"Superseded by v{superseded['by']}: this version can no longer be approved or run."
        )
    elif not can_approve:
        review_block = "You do not hold the approver role."
    elif is_author:
        review_block = "You wrote this version: someone else must review it."
    elif not version.submitted:
        review_block = "This version is a draft: its author has not asked for review."
    else:
        review_block = ""
    graph = {
        "plan": {"id": plan.pk, "name": plan.name},
        "version": _version_data(version, with_document=True),
        "api": _api_root(),
        "urls": _plan_urls(plan),
        "can_review": not review_block,
        "can_comment": user.can("review.comment"),
    }
    context = {
        "plan": plan,
        "version": version,
        "proposal": version_proposal(version),
        "graph": graph,
        "approvals": list(version.approvals.all()),
        "counts": _counts(version.diagnostics),
        "can_review": not review_block,
        "review_block": review_block,
        "can_edit": user.can("plan.edit"),
        "can_run": user.can("run.start"),
        "status_label": STATUS_LABELS.get(version.status, version.status),
        "exports": [("json", "JSON"), ("yaml", "YAML"), ("mermaid", "Mermaid"), ("dot", "DOT")],
        "api_export": f"{_api_root()}plans/{plan.pk}/versions/{version.number}/export",
        "run_url": _run_url(plan.pk, version.number),
        "impact": impact_view(version_impact(version)),
        "impact_changes": impact_changes(version.parent, version) if version.parent else [],
        "rules": rules_view(version),
        "milestones": version.document.get("milestones", []),
        "superseded": superseded,
    }
    return render(request, "plans/version.html", context)


def _superseded(version: PlanVersion) -> dict[str, Any] | None:
    """For a superseded version's page: the version that superseded it (``by``) and the
    plan's newest submitted version (``newest``, with its status), which is the one to
    review or run now; None for any other version."""
    if version.status != VersionStatus.SUPERSEDED or not version.superseded_by_id:
        return None
    newest = (
        PlanVersion.objects.filter(plan_id=version.plan_id, submitted=True, has_errors=False)
        .order_by("-number")
        .only("number", "status")
        .first()
    )
    assert newest is not None  # the version that superseded it, at least
    return {
        "by": version.superseded_by.number,  # type: ignore[union-attr]
        "newest": newest.number,
        "newest_status": newest.status,
        "newest_label": STATUS_LABELS.get(newest.status, newest.status),
    }


@require_GET
def diff(request: HttpRequest, plan_id: int) -> HttpResponse:
    ensure_permission(request.user, "plan.view")
    plan = get_object_or_404(Plan, pk=plan_id)
    versions = _versions(plan)
    latest = plan.latest_version.number if plan.latest_version else 1
    to_number = _number(request.GET.get("to") or latest)
    new = get_object_or_404(versions, number=to_number)
    default_from = new.parent.number if new.parent_id else max(1, to_number - 1)
    old = get_object_or_404(versions, number=_number(request.GET.get("from") or default_from))
    graph = {
        "plan": {"id": plan.pk, "name": plan.name},
        "from": _version_data(old, with_document=True),
        "to": _version_data(new, with_document=True),
        "api": _api_root(),
    }
    context = {
        "plan": plan,
        "old": old,
        "new": new,
        "graph": graph,
        "numbers": list(versions.order_by("-number").values_list("number", flat=True)),
        "impact": impact_view(version_impact(new)),
        "impact_changes": impact_changes(old, new),
    }
    return render(request, "plans/diff.html", context)


# --- Helpers ----------------------------------------------------------------------------


def review_decision(version: PlanVersion) -> dict[str, Any] | None:
    """The decision that sent ``version`` back to its author (its latest, when a
    rejection or a request for changes), for the editor's banner; None otherwise."""
    if version.status not in (VersionStatus.REJECTED, VersionStatus.CHANGES_REQUESTED):
        return None
    latest = (
        Approval.objects.filter(version=version)
        .select_related("reviewer")
        .order_by("-created_at", "-id")
        .first()
    )
    if latest is None:
        return None
    return {
        "decision": latest.decision,
        "reviewer": latest.reviewer_name,
        "comment": latest.comment,
        "created_at": latest.created_at,
    }


def version_proposal(version: PlanVersion) -> dict[str, Any] | None:
    """The planner's proposal that made ``version`` (its transcript), if a planner did."""
    row = (
        PlannerProposal.objects.filter(version=version)
        .select_related("requested_by", "version")
        .order_by("-created_at", "-id")
        .first()
    )
    return None if row is None else planning.proposal_data(row)


def _versions(plan: Plan) -> QuerySet[PlanVersion]:
    return (
        PlanVersion.objects.filter(plan=plan)
        .select_related("author", "parent", "superseded_by")
        .defer(*(f"superseded_by__{name}" for name in ("document", "diagnostics", "layout")))
    )


def _number(value: Any) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise Http404("no such version") from None
    if not 1 <= number <= 2_147_483_647:
        raise Http404("no such version")
    return number


def _version_data(version: PlanVersion, *, with_document: bool) -> dict[str, Any]:
    data: dict[str, Any] = {
        "id": version.pk,
        "number": version.number,
        "status": version.status,
        "status_label": STATUS_LABELS.get(version.status, version.status),
        "author": version.author.username,
        "note": version.note,
        "parent": version.parent.number if version.parent_id else None,
        "superseded_by": version.superseded_by.number if version.superseded_by_id else None,
        "has_errors": version.has_errors,
        "submitted": version.submitted,
        "created_at": version.created_at.isoformat(),
    }
    if with_document:
        data["document"] = version.document
        data["diagnostics"] = version.diagnostics
        data["layout"] = version.layout
    return data


def _counts(diagnostics: list[dict[str, Any]]) -> dict[str, int]:
    counts = Counter(item.get("severity") for item in diagnostics)
    return {severity: counts[severity] for severity in ("error", "warning", "info")}


def _api_root() -> str:
    return reverse("api:api-root")


def _editor_url_template() -> str:
    return reverse("plans:edit", kwargs={"plan_id": 0}).replace("/0/", "/{id}/")


def _plan_urls(plan: Plan) -> dict[str, str]:
    return {
        "edit": reverse("plans:edit", kwargs={"plan_id": plan.pk}),
        "history": reverse("plans:versions", kwargs={"plan_id": plan.pk}),
        "version": reverse("plans:version", kwargs={"plan_id": plan.pk, "number": 0}).replace(
            "/0/", "/{n}/"
        ),
        "diff": reverse("plans:diff", kwargs={"plan_id": plan.pk}),
        "run": _run_url(plan.pk, 0).replace("version=0", "version={n}"),
    }


def _run_url(plan_id: int, number: int) -> str:
    # The run pages belong to runs (a floor above): reached by URL name, never imported.
    # The Run buttons stay disabled unless the version is approved and compiles.
    return f"{reverse('runs:new')}?plan={plan_id}&version={number}"
