"""The review pages: the approval queue (``/review/``) and a run's replan view
(``/runs/<id>/replans/``).

Like the other pages they read (``reviews.queue``) and render; decisions go from the
browser through the API (``POST .../approve|reject`` with a comment), which checks again
who may decide. The pages hand their scripts the documents and diffs the graphs need
through ``json_script``; every word of a plan reaches the page through the template's
escaping or ``textContent``.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views.decorators.http import require_GET

from accounts.permissions import ensure_permission
from plans.views import STATUS_LABELS
from reviews import queue as review
from runs.models import Run
from runs.views import MAX_ID, RUN_STATUS_LABELS

# How a failed step's status reads in a sentence.
FAILURE_WORDS = {
    "invalid": "broke its contract",
    "failed": "failed",
    "needs_reconciliation": "was interrupted",
}


@require_GET
def queue(request: HttpRequest) -> HttpResponse:
    user = request.user
    if not (user.can("plan.approve") or user.can("step.approve")):
        raise PermissionDenied("The review queue is for approvers: it needs the approver role.")
    found = review.queue_for(user)
    graphs = {
        item["key"]: {
            "plan": item["plan"],
            "number": item["number"],
            "baseline": item["baseline"],
            "from": item.pop("baseline_document"),
            "to": item.pop("document"),
            "diff": item["diff"],
        }
        for item in found.versions
    }
    page_data = {"api": reverse("api:api-root"), "graphs": graphs}
    context = {
        "queue": found,
        "total": len(found.versions) + len(found.steps) + len(found.milestones),
        "page_data": page_data,
        "run_labels": RUN_STATUS_LABELS,
    }
    return render(request, "review/queue.html", context)


@require_GET
def replans(request: HttpRequest, run_id: int) -> HttpResponse:
    ensure_permission(request.user, "run.view")
    if run_id > MAX_ID:
        raise Http404("no such run")
    run = get_object_or_404(Run.objects.select_related("plan", "version", "started_by"), pk=run_id)
    story = review.replan_story(run)
    replan_list = story["replans"]
    selected = _selected(request.GET.get("replan"), len(replan_list))
    for replan in replan_list:
        failure = replan["failure"]
        failure["verb"] = (
            "was rejected"
            if failure["event"] == "step_rejected"
            else FAILURE_WORDS.get(failure["status"], "failed")
        )
    for version in [*story["versions"], *story["newer"]]:
        version["status_label"] = STATUS_LABELS.get(version["status"], version["status"])
    versions = {version["number"]: version for version in story["versions"]}
    page_data = {
        "run": {"id": run.pk, "status": run.status, "plan": run.plan_id},
        "documents": {str(number): version["document"] for number, version in versions.items()},
        # "kept" repeats "outputs" for the template; the script reads "outputs".
        "replans": [
            {k: v for k, v in replan.items() if k not in ("kept", "proposals")}
            for replan in replan_list
        ],
        "statuses": story["statuses"],
        "selected": selected,
        "urls": {"run": reverse("runs:detail", kwargs={"run_id": run.pk})},
    }
    context = {
        "run": run,
        "status_label": RUN_STATUS_LABELS.get(run.status, run.status),
        "lineage": _lineage(story, versions),
        "replans": replan_list,
        "selected": selected,
        "story": story,
        "max_replans": run.version.document.get("max_replans", 3),
        "page_data": page_data,
    }
    for version in story["versions"]:
        version.pop("document", None)  # in page_data once; the template needs no copy
    return render(request, "review/replans.html", context)


def _selected(value: str | None, count: int) -> int:
    """The replan ``?replan=N`` names (1-based), else the latest; 0 when there is none."""
    if value and value.isdigit() and 1 <= int(value) <= count:
        return int(value)
    return count


def _lineage(story: dict[str, Any], versions: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
    """Versions and the replans between them, in the order the run went through them."""
    entries: list[dict[str, Any]] = []
    numbers = [version["number"] for version in story["versions"]]
    if numbers:
        entries.append({"kind": "version", "version": versions[numbers[0]], "first": True})
    for replan in story["replans"]:
        entries.append({"kind": "replan", "replan": replan})
        if replan["to"] is not None and replan["to"] in versions:
            entries.append({"kind": "version", "version": versions[replan["to"]]})
    if story["pending"]:
        entries.append({"kind": "waiting", "newer": story["newer"]})
    return entries
