"""Every change to a run goes through here: start, approve or reject a waiting step,
cancel, resume with a new version, reconcile an interrupted step.

Each action checks who may do it, decides through the core Scheduler under the run's
lock (``runs.engine.locked_run``), and writes the audit event in the same transaction;
steps that become ready are queued for workers in that transaction too, so nothing is
lost between the database and the queue.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import Http404

from accounts.permissions import ensure_permission
from audit.services import record
from forge.errors import ForgeError
from forge.plan.drift import detect_drift
from forge.redaction import redact_text
from forge.runtime import approval_hash
from plans.compilation import runnable_graph, stored_document
from plans.errors import VersionHasErrors
from plans.models import PlanVersion, VersionStatus
from runs.engine import LockedRun, create_step_runs, graph_for, locked_run, new_scheduler
from runs.execution import approval_signer
from runs.models import Run, StepApproval, StepRun


class NotRunnable(ForgeError, ValueError):
    """The run's state or the given version does not allow the action (409)."""

    code = "not_runnable"


def _actor(user: Any) -> str:
    return str(user.get_username())


def start_run(version: PlanVersion, user: Any) -> Run:
    """Start a run of an approved version that compiles (409 ``not_approved`` or
    ``has_errors`` otherwise)."""
    ensure_permission(user, "run.start")
    with transaction.atomic():
        graph = runnable_graph(version)
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
            {"plan": version.plan_id, "version": version.number, "steps": len(graph.order)},
        )
    with locked_run(run.pk) as locked:
        locked.scheduler.prepare()
        locked.to_enqueue.extend(locked.became_ready())
    run.refresh_from_db()
    return run


def approve_step(run: Run, step_id: str, user: Any, comment: str = "") -> Run:
    """An approver who did not author the run's version approves exactly the step's
    current arguments; the step is queued."""
    ensure_permission(user, "step.approve")
    with locked_run(run.pk) as locked:
        _not_the_author(locked.run, user)
        node = _node(locked, step_id)
        args_hash = approval_hash(node)
        token = approval_signer().issue(str(run.pk), step_id, args_hash, _actor(user))
        locked.scheduler.approve(step_id, _actor(user), args_hash)
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
            {"step": step_id, "args_hash": args_hash, "comment": comment},
        )
    run.refresh_from_db()
    return run


def reject_step(run: Run, step_id: str, user: Any, comment: str = "") -> Run:
    ensure_permission(user, "step.approve")
    with locked_run(run.pk) as locked:
        _not_the_author(locked.run, user)
        node = _node(locked, step_id)
        locked.scheduler.reject(step_id, _actor(user), redact_text(comment))
        StepApproval.objects.create(
            run=locked.run,
            step_id=step_id,
            plan_version=locked.scheduler.state.plan_version,
            args_hash=approval_hash(node),
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

    The version must compile; it must be approved unless it keeps every constraint of
    the version it replaces (plan drift needs a person's approval first)."""
    ensure_permission(user, "run.resume")
    if version.plan_id != run.plan_id:
        raise NotRunnable("the new version belongs to another plan", code="wrong_plan")
    if version.has_errors:
        raise VersionHasErrors(
            f"version {version.number} has compile errors", diagnostics=version.diagnostics
        )
    with locked_run(run.pk) as locked:
        current = locked.run.version
        if version.number <= current.number:
            raise NotRunnable(
                f"resume needs a version newer than v{current.number}", code="stale_version"
            )
        drift = detect_drift(stored_document(current), stored_document(version))
        if drift and version.status != VersionStatus.APPROVED:
            raise NotRunnable(
                "plan drift needs approval first: " + "; ".join(drift), code="drift_needs_approval"
            )
        graph = graph_for(version)
        locked.scheduler.resume(graph, version.number, _actor(user))
        locked.run.version = version
        locked.to_enqueue.extend(locked.became_ready())
        record(
            _actor(user),
            "run.resumed",
            "run",
            run.pk,
            {"from_version": current.number, "version": version.number, "drift": list(drift)},
        )
    run.refresh_from_db()
    return run


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
    "reconcile_step",
    "reject_step",
    "resume_run",
    "start_run",
]
