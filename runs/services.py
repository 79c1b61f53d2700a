"""Every change to a run goes through here: start, approve or reject a waiting step,
review a milestone, cancel, write a replan, resume with a new version, reconcile an
interrupted step, re-run a run from chosen steps.

Each action checks who may do it, decides through the core Scheduler under the run's
lock (``runs.engine.locked_run``), and writes the audit event in the same transaction;
steps that become ready are queued for workers in that transaction too, so nothing is
lost between the database and the queue.

Start, re-run and resume pass the one approval gate (``forge.runtime.gate``, ``plans.gate``):
the version must be approved, by someone other than its author, for exactly the
content it has. A resume on a version that drops a constraint of the run's version
(plan drift) is refused until a person approved it, recorded and counted for the drift
metric; a read-only replan may continue on the policy's approval
(``auto_approve_replans: read_only``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import transaction
from django.http import Http404

from accounts.permissions import ensure_permission
from accounts.teams import teams_of
from audit.services import record
from forge.compiler import ExecutableGraph
from forge.errors import ForgeError
from forge.plan import ImportWarning, PlanDocument
from forge.plan.drift import detect_drift
from forge.redaction import redact_text
from forge.rules import Approver
from forge.runtime.gate import GateRefused, VersionApproval
from forge.runtime.replans import performed_side_effects
from forge.runtime.reruns import Rerun, RerunRefused, plan_rerun
from forge.runtime.scheduler import TransitionRefused
from plans.compilation import runnable_graph
from plans.errors import VersionHasErrors, VersionSuperseded
from plans.gate import approval_signer, gate, version_approval
from plans.models import PlanVersion, VersionStatus
from plans.rules import approvals_in_force, version_judgement
from plans.services import approve_by_policy, create_version
from runs import signals as run_signals
from runs import tracing
from runs.engine import (
    LockedRun,
    create_step_runs,
    graph_for,
    locked_run,
    new_scheduler,
    remember_graph,
)
from runs.execution import copy_workspace
from runs.executors import EXECUTORS
from runs.models import Run, StepApproval, StepRun


class NotRunnable(ForgeError, ValueError):
    """The run's state or the given version does not allow the action (409)."""

    code = "not_runnable"


def _actor(user: Any) -> str:
    return str(user.get_username())


def start_run(version: PlanVersion, user: Any, executor: str = "worker") -> Run:
    """Start a run of an approved version that compiles (409 ``not_approved``, ``superseded``,
    ``has_errors``, or the gate's code, such as ``content_changed``, otherwise).
    ``executor="agent"``: its MCP tool steps wait for the agent's calls through the
    gateway (``runs.executors``)."""
    ensure_permission(user, "run.start")
    if executor not in EXECUTORS:
        raise NotRunnable(
            f"executor must be one of {', '.join(EXECUTORS)}, not {executor!r}",
            code="invalid_executor",
        )
    graph = remember_graph(version, lambda: runnable_graph(version))
    approval = _cleared(version, graph)
    with transaction.atomic():
        run = Run.objects.create(
            plan=version.plan,
            version=version,
            status="queued",
            started_by=user,
            executor=executor,
        )
        tracing.run_started(run, version, approval)
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
                **({"executor": executor} if executor != "worker" else {}),
            },
        )
    with locked_run(run.pk) as locked:
        locked.scheduler.prepare(approval)
        locked.to_enqueue.extend(locked.became_ready())
    run.refresh_from_db()
    return run


def rerun_run(run: Run, steps: list[str], user: Any) -> Run:
    """A new run of ``run``'s version (the one it runs now) that keeps the recorded
    outputs of every step not downstream of ``steps`` and runs those steps and their
    descendants again (``forge.runtime.reruns``); its workspace starts as a copy of the
    old run's. It passes the gate exactly as a start does (409 ``not_approved``,
    ``content_changed``, ...), and steps that need approval wait for it again. 400
    ``unknown_step`` or ``no_steps`` for bad steps; 409 ``run_in_progress`` or
    ``needs_reconciliation`` when the old run may still act or may have acted. Audited
    as ``run.rerun`` on the new run."""
    ensure_permission(user, "run.start")
    version = PlanVersion.objects.select_related("plan").get(pk=run.version_id)
    graph = remember_graph(version, lambda: runnable_graph(version))
    approval = _cleared(version, graph)
    rerun = plan_rerun_of(run, steps)
    with transaction.atomic():
        new = Run.objects.create(
            plan=version.plan, version=version, status="queued", started_by=user,
            rerun_of=run, rerun_steps=list(rerun.chosen),
        )  # fmt: skip
        tracing.run_started(new, version, approval, rerun_of=run)
        scheduler = new_scheduler(new)
        create_step_runs(new, scheduler)
        record(
            _actor(user),
            "run.rerun",
            "run",
            new.pk,
            {
                "of": run.pk,
                "plan": version.plan_id,
                "version": version.number,
                **rerun.facts(),
                "approved_by": approval.approver,
                "content_hash": approval.content_hash,
            },
        )
    copy_workspace(run.pk, new.pk)
    with locked_run(new.pk) as locked:
        locked.scheduler.prepare(approval, rerun=rerun)
        locked.to_enqueue.extend(locked.became_ready())
    new.refresh_from_db()
    return new


def plan_rerun_of(run: Run, steps: list[str]) -> Rerun:
    """What re-running ``run`` from ``steps`` would keep and run again, read from the
    run's events under its lock (``forge.runtime.reruns.plan_rerun``)."""
    try:
        with locked_run(run.pk) as locked:
            return plan_rerun(locked.scheduler.graph, locked.scheduler.state, steps)
    except RerunRefused as refused:
        if refused.code in ("run_in_progress", "needs_reconciliation"):
            raise NotRunnable(refused.message, code=refused.code) from None
        raise


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
    teams = list(teams_of(user))
    with locked_run(run.pk) as locked:
        _node(locked, step_id)
        args_hash = locked.scheduler.approval_hash(step_id)
        step = locked.scheduler.state.steps[step_id]
        shown = step.preview_hash if preview_hash is None else preview_hash
        version_number = locked.scheduler.state.plan_version
        # Approvals of this exact call and preview that the step's rules did not find
        # enough on their own: counted with this one (SPEC section 10).
        earlier = [
            Approver(row.reviewer.get_username(), tuple(row.teams))
            for row in StepApproval.objects.filter(
                run=locked.run, step_id=step_id, plan_version=version_number,
                args_hash=args_hash, preview_hash=shown, decision="counted",
            ).select_related("reviewer")
            if row.reviewer_id != user.pk
        ]  # fmt: skip
        try:
            locked.scheduler.approve(
                step_id, _actor(user), args_hash, shown, teams=teams, others=earlier
            )
        except TransitionRefused as wanting:
            if wanting.code != "rules_unsatisfied":
                raise
            StepApproval.objects.create(
                run=locked.run, step_id=step_id, plan_version=version_number,
                args_hash=args_hash, reviewer=user, decision="counted",
                comment=redact_text(comment), teams=teams, preview_hash=shown,
            )  # fmt: skip
            record(_actor(user), "run.step_approval_counted", "run", run.pk, {
                "step": step_id, "args_hash": args_hash, "preview_hash": shown,
                "comment": comment, "teams": teams, "waiting": wanting.message,
            })  # fmt: skip
            # The step waits no longer for this approver: their ask may be resolved.
            transaction.on_commit(lambda: run_signals.waits_ended.send(sender=Run, run_id=run.pk))
            run.refresh_from_db()
            return run
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
            teams=teams,
            preview_hash=shown,
        )
        locked.to_enqueue.extend(locked.became_ready())
        record(
            _actor(user),
            "run.step_approved",
            "run",
            run.pk,
            {"step": step_id, "args_hash": args_hash, "preview_hash": shown, "comment": comment,
             "teams": teams,
             "approved_by": [a.label() for a in (Approver(_actor(user), tuple(teams)), *earlier)]},
        )  # fmt: skip
    run.refresh_from_db()
    return run


def review_milestone(run: Run, milestone_id: str, user: Any, comment: str = "") -> Run:
    """A person who did not author the run's version lets the run go on after a reached
    milestone that ends in a review; the steps it held are queued (or wait for their own
    approval). Audited as ``run.milestone_reviewed``."""
    ensure_permission(user, "step.approve")
    with locked_run(run.pk) as locked:
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


def _refuse_half_approved(version: PlanVersion) -> None:
    """People approved ``version`` but not enough for its approval rules: no policy may
    stand in for the rest (``approve_by_policy`` would refuse a rule that needs people),
    so say what the rules still lack (409 ``rules_unsatisfied``)."""
    counted, stop = approvals_in_force(version)
    if stop is not None or not any(not row.by_policy for row in counted):
        return
    judgement = version_judgement(version)
    if judgement is not None and not judgement.approved:
        raise NotRunnable(
            f"version {version.number} is not approved under the approval rules: "
            + "; ".join(judgement.lacking()),
            code="rules_unsatisfied",
        )


def _resume(run: Run, version: PlanVersion, actor: str) -> Run:
    if version.plan_id != run.plan_id:
        raise NotRunnable("the new version belongs to another plan", code="wrong_plan")
    if version.has_errors:
        raise VersionHasErrors(
            f"version {version.number} has compile errors", diagnostics=version.diagnostics
        )
    if version.status == VersionStatus.SUPERSEDED:  # beside "not approved": never runs
        raise VersionSuperseded.of(version, "run")
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
        _refuse_half_approved(version)
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
        tracing.run_resumed(locked.run, version, current, approval)
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
    import_warnings: Iterable[ImportWarning] = (),
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
        import_warnings=import_warnings,
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


def reconcile_step(
    run: Run, step_id: str, succeeded: bool, output: Any, user: Any, comment: str = ""
) -> Run:
    """Say what really happened to a step interrupted mid-way; ``comment`` (how the
    operator knows) goes to the audit trail with the decision."""
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
            {"step": step_id, "status": "succeeded" if succeeded else "failed", "comment": comment},
        )
    run.refresh_from_db()
    return run


def _node(locked: LockedRun, step_id: str) -> Any:
    node = locked.scheduler.graph.nodes.get(step_id)
    if node is None:
        raise Http404(f"run {locked.run.pk} has no step {step_id!r}")
    return node


__all__ = [
    "NotRunnable",
    "approve_step",
    "cancel_run",
    "create_replan",
    "reconcile_step",
    "plan_rerun_of",
    "reject_step",
    "rerun_run",
    "resume_automatically",
    "resume_run",
    "review_milestone",
    "start_run",
]
