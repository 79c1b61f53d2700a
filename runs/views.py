"""The run pages: the run list with its start form, the start page the plan pages link
to, and the live run page.

Pages read the models for what they list and for the data the page's script starts from
(handed over with ``json_script``, never inlined as code); every change goes through the
API (``runs.api``) from the browser, so the pages hold no write logic. The live page's
data is a snapshot whose ``last_seq`` matches its steps exactly, so the websocket can go
on from there without missing or repeating an event.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET

from accounts.permissions import ensure_permission
from forge.ids import MAX_ID
from forge.runtime.events import EventType
from forge.runtime.status import FINAL_RUN_STATUSES
from plans.compilation import policy
from plans.models import Plan, PlanVersion, VersionStatus
from runs.events import to_data
from runs.isolation import rlimits_only_steps
from runs.models import RUN_STATUS_LABELS, Run, RunEvent
from runs.snapshot import snapshot

PAGE_SIZE = 25
# How many approved versions the start form offers, newest first.
STARTABLE_LIMIT = 200


@require_GET
def run_list(request: HttpRequest) -> HttpResponse:
    ensure_permission(request.user, "run.view")
    status = request.GET.get("status", "")
    runs = Run.objects.select_related("plan", "version", "started_by").defer(
        "version__document", "version__diagnostics", "version__performed_side_effects"
    )
    if status in RUN_STATUS_LABELS:
        runs = runs.filter(status=status)
    else:
        status = ""
    plan_id = request.GET.get("plan", "")
    plan = None
    if plan_id.isdigit() and len(plan_id) < 19:
        plan = Plan.objects.filter(pk=int(plan_id)).only("pk", "name").first()
        runs = runs.filter(plan_id=int(plan_id))
    page = Paginator(runs, PAGE_SIZE).get_page(request.GET.get("page"))
    now = timezone.now()
    rows = [
        {
            "run": run,
            "label": RUN_STATUS_LABELS.get(run.status, run.status),
            "duration": _duration(run.created_at, run.finished_at or now),
            "live": run.status not in FINAL_RUN_STATUSES,
        }
        for run in page
    ]
    can_start = request.user.can("run.start")
    context = {
        "page": page,
        "rows": rows,
        "status": status,
        "statuses": list(RUN_STATUS_LABELS.items()),
        "plan": plan,
        "plan_query": f"&plan={plan.pk}" if plan else "",
        "can_start": can_start,
        "startable": _startable() if can_start else [],
        "start_data": _start_data(),
    }
    return render(request, "runs/list.html", context)


@require_GET
def new_run(request: HttpRequest) -> HttpResponse:
    """Start a run: the plan and version the plan pages' Run button names, preselected."""
    ensure_permission(request.user, "run.start")
    chosen: PlanVersion | None = None
    plan_id, number = request.GET.get("plan", ""), request.GET.get("version", "")
    if plan_id.isdigit() and number.isdigit() and len(plan_id) < 19 and len(number) < 10:
        chosen = (
            PlanVersion.objects.select_related("plan", "author", "superseded_by")
            .defer("document", "diagnostics", "performed_side_effects")
            .filter(plan_id=int(plan_id), number=int(number))
            .first()
        )
    startable = _startable()
    problem = ""
    if chosen is not None and not _is_startable(chosen):
        problem = f"{chosen.plan.name} v{chosen.number} cannot run: " + (
            "it has compile errors."
            if chosen.has_errors
            else f"it was superseded by v{chosen.superseded_by.number}."
            if chosen.superseded_by is not None
            else "it is not approved."
        )
    elif chosen is not None and not any(
        item["plan"] == chosen.plan_id and item["number"] == chosen.number for item in startable
    ):
        startable.insert(0, _option(chosen, None))  # beyond the list's limit, but asked for
    context = {
        "chosen": chosen if chosen is not None and not problem else None,
        "problem": problem,
        "startable": startable,
        "start_data": _start_data(),
    }
    return render(request, "runs/new.html", context)


@require_GET
def run_detail(request: HttpRequest, run_id: int) -> HttpResponse:
    ensure_permission(request.user, "run.view")
    if run_id > MAX_ID:
        raise Http404("no such run")
    run, data = snapshot(run_id)
    user = request.user
    version = run.version
    page_data = {
        "run": data,
        "document": version.document,
        "version": {
            "number": version.number,
            "author": version.author.get_username(),
            "status": version.status,
        },
        "user": {
            "username": user.get_username(),
            "is_version_author": version.author_id == user.pk,
            "can_approve": user.can("step.approve"),
            "can_cancel": user.can("run.cancel"),
            "can_resume": user.can("run.resume"),
            "can_reconcile": user.can("run.reconcile"),
            "can_edit": user.can("plan.edit"),
            "can_start": user.can("run.start"),
        },
        "api": reverse("api:api-root"),
        "socket": f"/ws/runs/{run.pk}/",
        "server_time": timezone.now(),
        "urls": {
            "edit": reverse("plans:edit", kwargs={"plan_id": run.plan_id}),
            "version": reverse(
                "plans:version", kwargs={"plan_id": run.plan_id, "number": 0}
            ).replace("/0/", "/{n}/"),
            "runs": reverse("runs:list"),
            "run": reverse("runs:detail", kwargs={"run_id": 0}).replace("/0/", "/{id}/"),
            # where a reached milestone is reviewed: its card in the review queue
            "milestone": reverse("review:queue") + f"#milestone-{run.pk}-{{m}}",
        },
        # The planner's notes since the run last needed a replan (the detail has none).
        "replan_notes": _replan_notes(run, data["last_seq"]),
        "labels": {"run": RUN_STATUS_LABELS},
        # Whether a read-only replan may resume on the policy's approval (the resume
        # panel says which versions can resume).
        "policy": {"auto_approve_replans": policy().auto_approve_replans},
    }
    context = {
        "run": run,
        "version": version,
        "status_label": RUN_STATUS_LABELS.get(run.status, run.status),
        "rerun_of": run.rerun_of_id,
        "reruns": data["reruns"],
        "page_data": page_data,
        "rlimits_only_steps": rlimits_only_steps(run),
    }
    return render(request, "runs/detail.html", context)


# --- Helpers ----------------------------------------------------------------------------


_REPLAN_NOTES = (
    EventType.RUN_REPLAN_STARTED,
    EventType.RUN_REPLAN_PROPOSED,
    EventType.RUN_REPLAN_FAILED,
    EventType.RUN_REPLAN_APPROVED,
)


def _replan_notes(run: Run, last_seq: int) -> list[dict[str, object]]:
    """The planner's notes on a run that needs a replan, since it last needed one, up to
    the page's snapshot: the page shows where the planner is without a reload."""
    if run.status not in ("needs_replan", "budget_exhausted"):
        return []
    events = RunEvent.objects.filter(run=run, seq__lte=last_seq)
    since = (
        events.filter(event_type=EventType.RUN_NEEDS_REPLAN).order_by("-seq").values("seq").first()
    )
    notes = events.filter(event_type__in=_REPLAN_NOTES, seq__gt=since["seq"] if since else 0)
    return [to_data(row) for row in notes.order_by("seq")]


def _startable_versions() -> QuerySet[PlanVersion]:
    return (
        PlanVersion.objects.filter(status=VersionStatus.APPROVED, has_errors=False)
        .select_related("plan")
        .defer("document", "diagnostics", "performed_side_effects")
        .order_by("plan__name", "plan_id", "-number")
    )


def _startable() -> list[dict[str, Any]]:
    """The approved versions, each plan's newest first; where a plan has several, the
    newest says so and the older ones name it, so the newest is the obvious choice."""
    versions = list(_startable_versions()[:STARTABLE_LIMIT])
    counts = Counter(version.plan_id for version in versions)
    newest: dict[int, int] = {}
    for version in versions:  # newest first within a plan
        newest.setdefault(version.plan_id, version.number)
    return [
        _option(version, newest[version.plan_id] if counts[version.plan_id] > 1 else None)
        for version in versions
    ]


def _option(version: PlanVersion, newest: int | None) -> dict[str, Any]:
    label = f"{version.plan.name} · v{version.number}"
    if newest is not None:
        label += (
            " (newest approved)" if newest == version.number else f" (older: v{newest} is newer)"
        )
    return {"plan": version.plan_id, "number": version.number, "label": label}


def _is_startable(version: PlanVersion) -> bool:
    return version.status == VersionStatus.APPROVED and not version.has_errors


def _start_data() -> dict[str, str]:
    return {
        "api": reverse("api:api-root"),
        "run": reverse("runs:detail", kwargs={"run_id": 0}).replace("/0/", "/{id}/"),
    }


def _duration(start: Any, end: Any) -> str:
    exact = max(0.0, (end - start).total_seconds())
    if exact < 10:
        return f"{exact:.1f} s"
    seconds = int(exact)
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"
