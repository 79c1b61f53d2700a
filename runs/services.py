"""Every change to a run goes through here: start, approve or reject a waiting step,
review a milestone, cancel, write a replan, resume with a new version, reconcile an
interrupted step.

Each action checks who may do it, decides through the core Scheduler under the run's
lock (``runs.engine.locked_run``), and writes the audit event in the same transaction;
steps that become ready are queued for workers in that transaction too, so nothing is
lost between the database and the queue.

Start and resume pass the one approval gate (``forge.runtime.gate``, ``plans.gate``):
the version must be approved, by someone other than its author, for exactly the
content it has. A resume on a version that drops a constraint of the run's version
(plan drift) is refused until a person approved it, recorded and counted for the drift
metric; a read-only replan may continue on the policy's approval
(``auto_approve_replans: read_only``).
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import Http404

from accounts.permissions import ensure_permission
from audit.services import record
from forge.compiler import ExecutableGraph
from forge.errors import ForgeError
from forge.plan import PlanDocument
from forge.plan.drift import detect_drift
from forge.redaction import redact_text
from forge.runtime.gate import GateRefused, VersionApproval
from forge.runtime.replans import performed_side_effects
from plans.compilation import runnable_graph
from plans.errors import VersionHasErrors
from plans.gate import approval_signer, gate, version_approval
from plans.models import PlanVersion, VersionStatus
from plans.services import approve_by_policy, create_version
from runs.engine import (
    LockedRun,
    create_step_runs,
    graph_for,
    locked_run,
    new_scheduler,
    remember_graph,
)
from runs.models import Run, StepApproval, StepRun


class NotRunnable(ForgeError, ValueError):
    """The run's state or the given version does not allow the action (409)."""

    code = "not_runnable"


def _actor(user: Any) -> str:
    return str(user.get_username())


def start_run(version: PlanVersion, user: Any) -> Run:
    """Start a run of an approved version that compiles (409 ``not_approved``,
    ``has_errors``, or the gate's code, such as ``content_changed``, otherwise)."""
    ensure_permission(user, "run.start")
    graph = remember_graph(version, lambda: runnable_graph(version))
    approval = _cleared(version, graph)
    with transaction.atomic():
        run = Run.objects.create(
            plan=version.plan, version=version, status="queued", started_by=user
        )
        scheduler = new_scheduler(run)
        create_step_runs(run, scheduler)
        record(
            _actor(user),
            "run.started",
            "run",
            run.pk,
            {
                "plan": version.plan_id,
                "version": version.number,
                "steps": len(graph.order),
                "approved_by": approval.approver,
                "content_hash": approval.content_hash,
            },
        )
    with locked_run(run.pk) as locked:
        locked.scheduler.prepare(approval)
        locked.to_enqueue.extend(locked.became_ready())
    run.refresh_from_db()
    return run


def _cleared(version: PlanVersion, graph: ExecutableGraph) -> VersionApproval:
    """The version's approval, cleared by the gate for ``graph``; ``NotRunnable`` with
    the gate's code otherwise."""
    try:
        return gate().clear(
            graph, version_approval(version), plan_id=str(version.plan_id), version=version.number
        )
    except GateRefused as refused:
        raise NotRunnable(refused.message, code=refused.code) from None


def approve_step(
    run: Run, step_id: str, user: Any, comment: str = "", preview_hash: str | None = None
) -> Run:
    """An approver who did not author the run's version approves exactly the step's
    current arguments and preview (``preview_hash``, when given, must be the preview the
    approver saw: 409 ``preview_changed`` if it is no longer the step's); the step is
    queued."""
    ensure_permission(user, "step.approve")
    with locked_run(run.pk) as locked:
        _not_the_author(locked.run, user)
        _node(locked, step_id)
        args_hash = locked.scheduler.approval_hash(step_id)
        step = locked.scheduler.state.steps[step_id]
        shown = step.preview_hash if preview_hash is None else preview_hash
        locked.scheduler.approve(step_id, _actor(user), args_hash, shown)
        token = approval_signer().issue(str(run.pk), step_id, args_hash, _actor(user), shown)
        StepRun.objects.filter(
            run=locked.run, plan_version=locked.scheduler.state.plan_version, step_id=step_id
        ).update(approval_signature=token.signature)
        StepApproval.objects.create(
            run=locked.run,
            step_id=step_id,
            plan_version=locked.scheduler.state.plan_version,
            args_hash=args_hash,
            reviewer=user,
            decision="approved",
            comment=redact_text(comment),
        )
        locked.to_enqueue.extend(locked.became_ready())
        record(
            _actor(user),
            "run.step_approved",
            "run",
            run.pk,
            {"step": step_id, "args_hash": args_hash, "preview_hash": shown, "comment": comment},
        )
    run.refresh_from_db()
    return run


def review_milestone(run: Run, milestone_id: str, user: Any, comment: str = "") -> Run:
    """A person who did not author the run's version lets the run go on after a reached
    milestone that ends in a review; the steps it held are queued (or wait for their own
    approval). Audited as ``run.milestone_reviewed``."""
    ensure_permission(user, "step.approve")
    with locked_run(run.pk) as locked:
        _not_the_author(locked.run, user)
        locked.scheduler.review_milestone(milestone_id, _actor(user), redact_text(comment))
        locked.to_enqueue.extend(locked.became_ready())
        record(
            _actor(user),
            "run.milestone_reviewed",
            "run",
            run.pk,
            {"milestone": milestone_id, "comment": comment},
        )
    run.refresh_from_db()
    return run


def reject_step(run: Run, step_id: str, user: Any, comment: str = "") -> Run:
    ensure_permission(user, "step.approve")
    with locked_run(run.pk) as locked:
        _not_the_author(locked.run, user)
        _node(locked, step_id)
        locked.scheduler.reject(step_id, _actor(user), redact_text(comment))
        StepApproval.objects.create(
            run=locked.run,
            step_id=step_id,
            plan_version=locked.scheduler.state.plan_version,
            args_hash=locked.scheduler.approval_hash(step_id),
            reviewer=user,
            decision="rejected",
            comment=redact_text(comment),
        )
        record(
            _actor(user), "run.step_rejected", "run", run.pk, {"step": step_id, "comment": comment}
        )
    run.refresh_from_db()
    return run


def cancel_run(run: Run, user: Any) -> Run:
    ensure_permission(user, "run.cancel")
    with locked_run(run.pk) as locked:
        locked.scheduler.cancel(_actor(user), "cancelled by an operator")
        record(_actor(user), "run.cancelled", "run", run.pk, {})
    run.refresh_from_db()
    return run


def resume_run(run: Run, version: PlanVersion, user: Any) -> Run:
    """Continue a run that needs a replan on ``version`` (a later version of its plan).

    The version must compile and pass the gate as a start does. A version that is not
    approved by a person may continue on the policy's approval when it is a read-only
    replan that drops no constraint; plan drift always waits for a person: the run
    stays on its last approved version (409 ``drift_needs_approval``), and the refusal
    is audited as ``run.resume_refused`` with the drift, which the drift metric counts.
    """
    ensure_permission(user, "run.resume")
    return _resume(run, version, _actor(user))


def resume_automatically(run: Run, version: PlanVersion, actor: str) -> Run:
    """Resume a run whose plan replans automatically (``replan: auto``) on ``version``,
    the planner's replan of its current version, without an operator: under the
    policy's approval (``auto_approve_replans``) right after the planner proposed it
    (``actor`` ``policy``), or once a person approved it (``actor`` that person). Exactly
    the gate a person's resume passes: ``NotRunnable`` with its code otherwise, and the
    replan waits in the review queue."""
    return _resume(run, version, actor)


def _resume(run: Run, version: PlanVersion, actor: str) -> Run:
    if version.plan_id != run.plan_id:
        raise NotRunnable("the new version belongs to another plan", code="wrong_plan")
    if version.has_errors:
        raise VersionHasErrors(
            f"version {version.number} has compile errors", diagnostics=version.diagnostics
        )
    current = Run.objects.select_related("version").get(pk=run.pk).version
    if version.number <= current.number:
        raise NotRunnable(
            f"resume needs a version newer than v{current.number}", code="stale_version"
        )
    graph, parent = graph_for(version), graph_for(current)
    drift = detect_drift(parent.document, graph.document)
    if version.status != VersionStatus.APPROVED:
        if drift:
            _refuse_drift(run, version, current, drift, actor)
        try:
            approve_by_policy(version, parent, graph)
        except GateRefused as refused:  # the policy may not: a person must approve it
            raise NotRunnable(refused.message, code=refused.code) from None
    approval = _cleared(version, graph)
    with locked_run(run.pk) as locked:
        if locked.run.version_id != current.pk:
            raise NotRunnable("the run moved on to another version meanwhile", code="conflict")
        locked.scheduler.resume(graph, version.number, actor, approval)
        locked.run.version = version
        locked.to_enqueue.extend(locked.became_ready())
        record(
            actor,
            "run.resumed",
            "run",
            run.pk,
            {
                "from_version": current.number,
                "version": version.number,
                "drift": list(drift),
                "approved_by": approval.approver,
                "content_hash": approval.content_hash,
            },
        )
    run.refresh_from_db()
    return run


def _refuse_drift(
    run: Run, version: PlanVersion, current: PlanVersion, drift: tuple[str, ...], actor: str
) -> None:
    """Refuse a resume on a drifted version no person approved; audited, so the drift
    metric counts it."""
    with transaction.atomic():
        record(
            actor,
            "run.resume_refused",
            "run",
            run.pk,
            {"from_version": current.number, "version": version.number, "drift": list(drift)},
        )
    raise NotRunnable(
        f"plan drift: version {version.number} " + "; ".join(drift) + ". The run stays on "
        f"v{current.number}, the last approved version, until a person approves "
        f"v{version.number}",
        code="drift_needs_approval",
    )


def create_replan(
    run: Run,
    user: Any,
    document: PlanDocument,
    *,
    source_format: str = "json",
    note: str = "",
    replan_reason: str = "",
    planner: str = "editor",
) -> PlanVersion:
    """Save ``document`` as a replan of the run's current version: its parent is that
    version, and it carries the side effects the run already performed (the same core
    function the CLI's replans use), so the compiler warns a reviewer of any it would
    repeat. The reason defaults to what failed. A person writing it needs
    ``plan.edit``; the planner writes it for the person who started the run
    (``planner`` names it), as that run's plan asked (``replan: auto``)."""
    if planner == "editor":
        ensure_permission(user, "plan.edit")
    with locked_run(run.pk) as locked:
        scheduler = locked.scheduler
        performed = performed_side_effects(scheduler.graph, scheduler.state)
        failed = scheduler.state.failed_step
        if not replan_reason and failed:
            replan_reason = f"step {failed!r} {scheduler.state.steps[failed].status}: " + (
                scheduler.state.steps[failed].error or "no error message"
            )
        current = locked.run.version
    version = create_version(
        run.plan,
        user,
        document,
        parent=current,
        source_format=source_format,
        replan_reason=replan_reason,
        note=note,
        planner=planner,
        performed_side_effects=performed,
    )
    with transaction.atomic():
        record(
            _actor(user) if planner == "editor" else planner,
            "run.replanned",
            "run",
            run.pk,
            {
                "from_version": current.number,
                "version": version.number,
                "performed_side_effects": len(performed),
                "planner": planner,
                "on_behalf_of": _actor(user),
            },
        )
    return version


def reconcile_step(run: Run, step_id: str, succeeded: bool, output: Any, user: Any) -> Run:
    ensure_permission(user, "run.reconcile")
    with locked_run(run.pk) as locked:
        _node(locked, step_id)
        locked.scheduler.reconcile(step_id, succeeded, output, _actor(user))
        locked.to_enqueue.extend(locked.became_ready())
        record(
            _actor(user),
            "run.step_reconciled",
            "run",
            run.pk,
            {"step": step_id, "status": "succeeded" if succeeded else "failed"},
        )
    run.refresh_from_db()
    return run


def _node(locked: LockedRun, step_id: str) -> Any:
    node = locked.scheduler.graph.nodes.get(step_id)
    if node is None:
        raise Http404(f"run {locked.run.pk} has no step {step_id!r}")
    return node


def _not_the_author(run: Run, user: Any) -> None:
    if run.version.author_id == user.pk:
        raise PermissionDenied("the author of a plan version cannot approve its steps")


__all__ = [
    "NotRunnable",
    "approve_step",
    "cancel_run",
    "create_replan",
    "reconcile_step",
    "reject_step",
    "resume_automatically",
    "resume_run",
    "review_milestone",
    "start_run",
]
