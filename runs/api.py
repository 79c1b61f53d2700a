"""The runs router: start runs, follow their events, and move them on (approve, reject,
resume, cancel, reconcile, re-run from chosen steps). Reads need ``run.view``; writes go
through ``runs.services``, which checks the permission each action needs.

No ``from __future__ import annotations`` here: ninja reads the operations' annotations
at runtime, and ``@paginate`` hides this module's names from string annotations.
"""

from typing import Annotated, Any

from django.db.models import Prefetch, QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from ninja import Path, Query, Router, Status
from ninja.pagination import paginate

from accounts.permissions import require_permission
from accounts.throttling import EXPENSIVE
from forge.ids import MAX_ID
from forge.rules import Judgement
from plans.documents import read_document
from plans.models import PlanVersion
from plans.rules import judgement_view
from runs import engine, services
from runs.events import to_data
from runs.executors import agents_step_ids
from runs.models import Artifact, ExecutionRecord, Run, RunEvent, StepRun
from runs.schemas import (
    CommentIn,
    EventsQuery,
    ReconcileIn,
    RecordOut,
    ReplanIn,
    RerunIn,
    RerunPlanOut,
    RerunQuery,
    ResumeIn,
    RunFilters,
    RunIn,
    RunOut,
    RunSummaryOut,
    StepDecisionIn,
    StepRulesOut,
)
from runs.step_rules import step_judgements

router = Router(tags=["runs"])

RunId = Annotated[int, Path(ge=1, le=MAX_ID)]
StepId = Annotated[str, Path(pattern=r"^[A-Za-z0-9_.-]{1,64}$")]


def _runs() -> QuerySet[Run]:
    return Run.objects.select_related("plan", "version", "started_by")


def summary(run: Run) -> dict[str, Any]:
    return {
        "id": run.pk,
        "plan_id": run.plan_id,
        "plan_name": run.plan.name,
        "version": run.version.number,
        "status": run.status,
        "started_by": run.started_by.get_username(),
        "created_at": run.created_at,
        "finished_at": run.finished_at,
        "replans": run.replans,
        "last_seq": run.last_seq,
    }


def detail(run: Run) -> dict[str, Any]:
    document = run.version.document
    budget = document.get("budget", {})
    steps = list(StepRun.objects.filter(run=run, plan_version=run.version.number))
    depends = {step["id"]: step.get("depends_on", []) for step in document.get("steps", [])}
    waiting = [s for s in steps if s.status == "awaiting_approval"]
    previews = waiting_previews(run, [s.step_id for s in waiting])
    for step in waiting:
        step.run = run  # judged below from the run's version, read once
    judgements = step_judgements(waiting)
    return {
        **summary(run),
        "budget": {
            "used_steps": run.used_steps,
            "used_tokens": run.used_tokens,
            "used_cost": run.used_cost,
            "max_steps": budget.get("max_steps"),
            "max_tokens": budget.get("max_tokens"),
            "max_cost": budget.get("max_cost"),
        },
        "max_replans": document.get("max_replans", 3),
        "failed_step": run.failed_step,
        "reset": run.reset_steps,
        "preserved": run.preserved_steps,
        "blocked_reason": run.blocked_reason,
        "awaiting_review": run.awaiting_review,
        "rerun_of": run.rerun_of_id,
        "rerun_steps": run.rerun_steps,
        "reruns": list(
            Run.objects.filter(rerun_of=run).order_by("pk").values_list("pk", flat=True)
        ),
        "executor": run.executor,
        "agent_steps": agents_step_ids(run, [(s.step_id, s.tool_name) for s in steps]),
        "steps": [
            {
                "step_id": s.step_id,
                "plan_version": s.plan_version,
                "status": s.status,
                "attempt": s.attempt,
                "tool": s.tool_name,
                "args_hash": s.args_hash,
                "depends_on": depends.get(s.step_id, []),
                "output": s.output,
                "error": s.error,
                "verdict": s.verdict,
                "tokens": s.tokens,
                "cost": s.cost,
                "approved_by": s.approved_by,
                "started_at": s.started_at,
                "finished_at": s.finished_at,
                "latency_ms": s.latency_ms,
                "artifacts": s.artifacts,
                "preview": previews.get(s.step_id),
                **_step_rules(judgements.get(s.pk)),
            }
            for s in steps
        ],
    }


def _step_rules(judgement: Judgement | None) -> dict[str, Any]:
    """A waiting step's approval rules (SPEC section 10) as the version answer has them,
    each with what it still needs in words; ``None`` for a step that does not wait."""
    view = judgement_view(judgement)
    if view is None:
        return {"rules": None, "not_counted": []}
    return {"rules": view["rules"], "not_counted": view["not_counted"]}


def waiting_previews(run: Run, step_ids: list[str]) -> dict[str, Any]:
    """The preview each of ``step_ids`` (waiting for approval) shows: the one its latest
    ``step_awaiting_approval`` event carries."""
    if not step_ids:
        return {}
    rows = (
        RunEvent.objects.filter(run=run, step_id__in=step_ids, event_type="step_awaiting_approval")
        .order_by("step_id", "-seq")
        .values_list("step_id", "facts")
    )
    previews: dict[str, Any] = {}
    for step_id, facts in rows:
        if step_id not in previews:
            previews[step_id] = facts.get("preview") if isinstance(facts, dict) else None
    return previews


@router.post("/runs", response={201: RunOut})
@require_permission("run.start")
def start_run(request: HttpRequest, body: RunIn) -> Any:
    """Start a run of an approved version that compiles (409 otherwise)."""
    version = get_object_or_404(PlanVersion, plan_id=body.plan_id, number=body.version)
    run = services.start_run(version, request.auth, body.executor)
    return Status(201, detail(_runs().get(pk=run.pk)))


@router.get("/runs", response=list[RunSummaryOut])
@require_permission("run.view")
@paginate
def list_runs(request: HttpRequest, filters: Query[RunFilters]) -> Any:
    """Runs, newest first."""
    runs = _runs()
    if filters.status:
        runs = runs.filter(status=filters.status)
    if filters.plan_id:
        runs = runs.filter(plan_id=filters.plan_id)
    return _Summaries(runs)


class _Summaries:
    """A lazily mapped queryset, so pagination slices the query, not a list of all."""

    def __init__(self, runs: QuerySet[Run]) -> None:
        self.runs = runs

    def __len__(self) -> int:
        return self.runs.count()

    def count(self) -> int:
        return self.runs.count()

    def __getitem__(self, index: slice) -> list[dict[str, Any]]:
        return [summary(run) for run in self.runs[index]]


@router.get("/runs/{run_id}", response=RunOut)
@require_permission("run.view")
def get_run(request: HttpRequest, run_id: RunId) -> Any:
    """The run, its steps in the current version with their status, and budget use."""
    return detail(get_object_or_404(_runs(), pk=run_id))


@router.get("/runs/{run_id}/steps/{step_id}/rules", response=StepRulesOut)
@require_permission("run.view")
def get_step_rules(request: HttpRequest, run_id: RunId, step_id: StepId) -> Any:
    """The approval rules matching a step of the run's current version while it waits
    for approval, each with who counts toward it so far; ``rules`` is null for a step
    that does not wait (404 for a step the version does not have)."""
    run = get_object_or_404(_runs(), pk=run_id)
    step = get_object_or_404(StepRun, run=run, plan_version=run.version.number, step_id=step_id)
    judgement = None
    if step.status == "awaiting_approval":
        step.run = run
        judgement = step_judgements([step]).get(step.pk)
    return {"step_id": step_id, "status": step.status, **_step_rules(judgement)}


@router.get("/runs/{run_id}/events", response=list[dict[str, Any]])
@require_permission("run.view")
def list_events(request: HttpRequest, run_id: RunId, query: Query[EventsQuery]) -> Any:
    """Events after ``after``, in seq order (at most ``limit``)."""
    run = get_object_or_404(Run, pk=run_id)
    rows = RunEvent.objects.filter(run=run, seq__gt=query.after).order_by("seq")
    return [to_data(row) for row in rows[: query.limit]]


@router.post("/runs/{run_id}/steps/{step_id}/approve", response=RunOut)
@require_permission("step.approve")
def approve_step(request: HttpRequest, run_id: RunId, step_id: StepId, body: StepDecisionIn) -> Any:
    """Approve a waiting step's exact arguments and preview (never by the version's
    author); with ``preview_hash``, only if that is still the preview it shows."""
    run = services.approve_step(
        get_object_or_404(Run, pk=run_id), step_id, request.auth, body.comment, body.preview_hash
    )
    return detail(_runs().get(pk=run.pk))


@router.post("/runs/{run_id}/milestones/{milestone_id}/review", response=RunOut)
@require_permission("step.approve")
def review_milestone(
    request: HttpRequest, run_id: RunId, milestone_id: StepId, body: CommentIn
) -> Any:
    """Let a run go on after a milestone that ends in a review: every step of it
    succeeded and a person other than the version's author looked at the facts (409
    ``transition_refused`` before it is reached or once reviewed)."""
    run = services.review_milestone(
        get_object_or_404(Run, pk=run_id), milestone_id, request.auth, body.comment
    )
    return detail(_runs().get(pk=run.pk))


@router.post("/runs/{run_id}/steps/{step_id}/reject", response=RunOut)
@require_permission("step.approve")
def reject_step(request: HttpRequest, run_id: RunId, step_id: StepId, body: CommentIn) -> Any:
    """Reject a waiting step: it fails and the run needs a replan."""
    run = services.reject_step(
        get_object_or_404(Run, pk=run_id), step_id, request.auth, body.comment
    )
    return detail(_runs().get(pk=run.pk))


@router.post("/runs/{run_id}/replans", response={201: dict[str, Any]}, throttle=EXPENSIVE)
@require_permission("plan.edit")
def create_replan(request: HttpRequest, run_id: RunId, body: ReplanIn) -> Any:
    """Save a new version of the run's plan as a replan of the run's current version,
    carrying the side effects the run already performed (the compiler warns of any the
    new version would repeat). It waits for review like any version; resume the run on
    it once approved."""
    run = get_object_or_404(Run.objects.select_related("plan", "version"), pk=run_id)
    received = read_document(document=body.document, source=body.source, format=body.format)
    version = services.create_replan(
        run, request.auth, received.document, source_format=received.format, note=body.note,
        replan_reason=body.replan_reason, import_warnings=received.warnings,
    )  # fmt: skip
    return Status(
        201,
        {
            "plan": version.plan_id,
            "number": version.number,
            "status": version.status,
            "parent": run.version.number,
            "replan_reason": version.replan_reason,
            "diagnostics": version.diagnostics,
            "performed_side_effects": version.performed_side_effects,
        },
    )


@router.post("/runs/{run_id}/resume", response=RunOut)
@require_permission("run.resume")
def resume_run(request: HttpRequest, run_id: RunId, body: ResumeIn) -> Any:
    """Continue after ``needs_replan`` on a newer version of the plan."""
    run = get_object_or_404(Run, pk=run_id)
    version = get_object_or_404(PlanVersion, plan_id=run.plan_id, number=body.version)
    services.resume_run(run, version, request.auth)
    return detail(_runs().get(pk=run.pk))


@router.post("/runs/{run_id}/rerun", response={201: RunOut})
@require_permission("run.start")
def rerun_run(request: HttpRequest, run_id: RunId, body: RerunIn) -> Any:
    """Start a new run of the run's approved version that keeps the recorded outputs of
    every step not downstream of ``steps`` (never run again) and runs those steps and
    their descendants; steps among them that need approval wait for it again. It passes
    the gate as a start does (409 otherwise); 400 ``unknown_step`` names steps the
    version lacks; 409 ``run_in_progress`` or ``needs_reconciliation`` while the run may
    still act, or may have acted without saying so."""
    run = services.rerun_run(get_object_or_404(Run, pk=run_id), body.steps, request.auth)
    return Status(201, detail(_runs().get(pk=run.pk)))


@router.get("/runs/{run_id}/rerun", response=RerunPlanOut)
@require_permission("run.view")
def rerun_plan(request: HttpRequest, run_id: RunId, query: Query[RerunQuery]) -> Any:
    """What ``POST /runs/{id}/rerun`` with these ``steps`` would run again, keep, and
    which of the steps it runs again will wait for approval. Nothing is started."""
    run = get_object_or_404(Run, pk=run_id)
    rerun = services.plan_rerun_of(run, query.steps)
    nodes = engine.graph_for(run.version).nodes
    return {
        **rerun.facts(),
        "needs_approval": [
            {"step": step_id, "reasons": list(nodes[step_id].approval_reasons)}
            for step_id in rerun.rerun
            if nodes[step_id].approval_reasons
        ],
    }


@router.post("/runs/{run_id}/cancel", response=RunOut)
@require_permission("run.cancel")
def cancel_run(request: HttpRequest, run_id: RunId) -> Any:
    """Stop admission and cancel every step that has not started."""
    services.cancel_run(get_object_or_404(Run, pk=run_id), request.auth)
    return detail(_runs().get(pk=run_id))


@router.post("/runs/{run_id}/steps/{step_id}/reconcile", response=RunOut)
@require_permission("run.reconcile")
def reconcile_step(request: HttpRequest, run_id: RunId, step_id: StepId, body: ReconcileIn) -> Any:
    """Say what really happened to a step interrupted mid-way."""
    services.reconcile_step(
        get_object_or_404(Run, pk=run_id),
        step_id,
        body.status == "succeeded",
        body.output,
        request.auth,
        body.comment,
    )
    return detail(_runs().get(pk=run_id))


@router.get("/runs/{run_id}/records", response=list[RecordOut])
@require_permission("run.view")
def list_records(request: HttpRequest, run_id: RunId) -> Any:
    """Every execution record of the run, with its artifacts (logs, diffs)."""
    run = get_object_or_404(Run, pk=run_id)
    records = ExecutionRecord.objects.filter(run=run).prefetch_related(
        Prefetch("artifacts", queryset=Artifact.objects.defer("content"))
    )
    return [
        {
            **{
                f.name: getattr(r, f.name)
                for f in ExecutionRecord._meta.concrete_fields
                if f.name != "run"
            },
            "artifacts": [
                {
                    "id": a.pk,
                    "name": a.name,
                    "media_type": a.media_type,
                    "size": a.size,
                    "truncated": a.truncated,
                }
                for a in r.artifacts.all()
            ],
        }
        for r in records
    ]


@router.get("/runs/{run_id}/artifacts/{artifact_id}", response={200: None})
@require_permission("run.view")
def download_artifact(request: HttpRequest, run_id: RunId, artifact_id: RunId) -> HttpResponse:
    """One artifact's content, as a download."""
    artifact = get_object_or_404(Artifact, pk=artifact_id, record__run_id=run_id)
    response = HttpResponse(bytes(artifact.content), content_type=artifact.media_type)
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in artifact.name)
    response["Content-Disposition"] = f'attachment; filename="{safe}"'
    response["X-Content-Type-Options"] = "nosniff"
    return response
