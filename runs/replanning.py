"""Automatic replans on workers: a run of a plan that says ``replan: auto`` that reaches
``needs_replan`` asks the deployment's planner (``FORGE_PLANNER``) for version N+1.

The planner is told seed 003's replan input (``forge.runtime.replans.replan_observation``:
the goal, the current version, the failed step with its error or contract verdict, the
completed steps' outputs as quoted data, the side effects already performed), through
the core's bounded retry loop. Its version is saved as a replan of the run's version
(``runs.services.create_replan``: ``parent_plan_id``, ``replan_reason``, the performed
side effects), authored by the person who started the run, made by the planner. Then the
gate decides, as for a person's resume: under ``auto_approve_replans: read_only`` a
replan that keeps every constraint and only reads continues at once, approved by
``policy``; anything else (and always a replan that adds a tool, a permission scope or a
side-effect class) waits in the review queue with its diff, and the run resumes when a
person other than its author approves it (``resume_after_approval``).

The planner is asked outside any transaction (a model may take its time); the run notes
that it started (``run_replan_started``), and what it was told and answered is kept as a
``PlannerProposal`` and noted on the run (``run_replan_proposed``, with whom the version
waits for, or ``run_replan_failed``, with tokens, cost and model), and audited. A
person's approval of the version is noted too (``run_replan_approved``) before the run
resumes on it, so the run's page follows every stage live. One question per
``run_needs_replan`` event: a task delivered twice asks once.
``max_replans`` bounds the loop: the Scheduler fails the run once it is used up.
"""

from __future__ import annotations

import logging
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction

from audit.services import record as audit
from forge.planners.proposals import PlannerFailed
from forge.runtime.events import EventType
from forge.runtime.gate import replan_needs_person
from forge.runtime.replans import replan_observation
from forge.runtime.status import FINAL_RUN_STATUSES
from plans import planning
from plans.compilation import policy
from plans.errors import VersionHasErrors
from plans.models import PlannerProposal, PlanVersion, ProposalKind
from runs import services
from runs.engine import graph_for, locked_run
from runs.models import Run, RunEvent

__all__ = ["replan_automatically", "resume_after_approval"]

logger = logging.getLogger(__name__)
_NAMED = 5  # approvers named in a proposal's note


def replan_automatically(run_id: int, trigger_seq: int) -> PlannerProposal | None:
    """Ask the planner for the next version of run ``run_id``, which needed a replan at
    event ``trigger_seq``; ``None`` when there is nothing (left) to ask."""
    run = Run.objects.select_related("version", "started_by", "plan").get(pk=run_id)
    if run.status != "needs_replan" or run.version.document.get("replan") != "auto":
        return None
    if RunEvent.objects.filter(
        run=run, seq__gt=trigger_seq, event_type__in=(
            EventType.RUN_REPLAN_PROPOSED, EventType.RUN_REPLAN_FAILED, EventType.RUN_RESUMED,
        ),
    ).exists():  # fmt: skip
        return None  # this failure was answered already (a task delivered twice)
    with locked_run(run_id) as locked:
        scheduler = locked.scheduler
        if scheduler.state.status != "needs_replan":
            return None
        observation = replan_observation(scheduler.graph, scheduler.state)
        goal = scheduler.graph.document.goal
    question = planning.Question(
        ProposalKind.REPLAN, run.started_by, goal, goal, observation,
        performed=observation.performed_side_effects, run_id=run.pk,
    )  # fmt: skip
    try:
        planner = planning.deployment_planner()
    except Exception as exc:  # not configured, a bad spec: the run waits for a person
        _failed(run, f"no planner: {exc}", getattr(exc, "code", "planner_not_configured"))
        return None
    name = planning.planner_name(planner)
    _note(
        run,
        EventType.RUN_REPLAN_STARTED,
        f"the planner {name} is working on a replan of v{run.version.number}",
        {"planner": name, "on_behalf_of": run.started_by.get_username()},
        None,
        actor=name,
    )
    outcome = planning.ask(planner, question)
    plan = None if isinstance(outcome, PlannerFailed) else outcome.plan
    version: PlanVersion | None = None
    if plan is not None:
        version = services.create_replan(
            run,
            run.started_by,
            plan.document,
            note=plan.rationale or f"proposed by {planning.planner_name(planner)}",
            replan_reason=plan.reason,
            planner=planning.planner_name(planner),
        )
    with transaction.atomic():
        row = planning.record(planner, question, outcome, version)
    facts = {
        "proposal": row.pk, "planner": row.planner, "status": row.status,
        "attempts": len(row.attempts), "version": version.number if version else None,
        "on_behalf_of": run.started_by.get_username(),
    }  # fmt: skip
    if version is not None:
        facts["waits_for"] = waits_for(version, run.version)
    kind = EventType.RUN_REPLAN_PROPOSED if version is not None else EventType.RUN_REPLAN_FAILED
    reason = (
        f"the planner proposed v{version.number}" if version is not None
        else f"the planner proposed no version: {row.error} [{row.error_code}]"
    )  # fmt: skip
    _note(run, kind, reason, facts, row)
    if version is not None and not version.has_errors:
        try:
            services.resume_automatically(run, version, "policy")
        except services.NotRunnable as waiting:  # a person must approve it: the queue
            logger.info("run %s: v%s waits for a person: %s", run.pk, version.number, waiting)
    return row


def resume_after_approval(version_id: int, approver: str) -> None:
    """A person approved ``version_id``: resume each run of ``replan: auto`` whose planner
    proposed it and that still waits on its parent version."""
    version = PlanVersion.objects.select_related("parent").get(pk=version_id)
    run_ids = PlannerProposal.objects.filter(
        version=version, kind=ProposalKind.REPLAN, run_id__isnull=False
    ).values_list("run_id", flat=True)
    for run in Run.objects.filter(pk__in=list(run_ids), status="needs_replan"):
        if run.version_id != version.parent_id:
            continue
        facts = {"version": version.number, "approver": approver}
        _note(run, EventType.RUN_REPLAN_APPROVED,
              f"{approver} approved v{version.number}: the run resumes on it", facts, None,
              actor=approver)  # fmt: skip
        try:
            services.resume_automatically(run, version, approver)
        except (services.NotRunnable, VersionHasErrors) as refused:
            logger.info("run %s stays: %s", run.pk, refused)
            _note(
                run,
                EventType.RUN_REPLAN_FAILED,
                f"v{version.number} was approved but cannot resume the run: {refused} "
                f"[{refused.code}]",
                {**facts, "code": refused.code},
                None,
                actor=approver,
            )


def waits_for(version: PlanVersion, parent: PlanVersion) -> dict[str, Any]:
    """Whom the planner's ``version`` (a replan of ``parent``) waits for before the run
    resumes on it: ``policy`` (a read-only replan the policy approves at once),
    ``approvers`` (a person other than its author; ``approvers`` names some who can,
    ``why`` says why the policy may not), or ``nobody`` (it does not compile: an author
    must fix it in a new version). What the run page says while it waits."""
    if version.has_errors:
        return {"who": "nobody", "why": [f"v{version.number} has compile errors"]}
    reasons = replan_needs_person(policy(), graph_for(parent), graph_for(version))
    if not reasons:
        return {"who": "policy", "why": []}
    author = version.author.get_username()
    people = [
        user.get_username()
        for user in get_user_model().objects.filter(is_active=True).order_by("username")
        if user.can("plan.approve") and user.pk != version.author_id
    ]
    return {"who": "approvers", "author": author, "approvers": people[:_NAMED],
            "more": max(0, len(people) - _NAMED), "why": list(reasons)}  # fmt: skip


def _failed(run: Run, reason: str, code: str) -> None:
    _note(run, EventType.RUN_REPLAN_FAILED, reason, {"code": code}, None)


# Notes of the planner's answer are audited; the others say only what goes on meanwhile.
_AUDITED = {
    EventType.RUN_REPLAN_PROPOSED: "run.replan_proposed",
    EventType.RUN_REPLAN_FAILED: "run.replan_failed",
}


def _note(
    run: Run,
    kind: str,
    reason: str,
    facts: dict[str, Any],
    row: PlannerProposal | None,
    actor: str = "",
) -> None:
    actor = actor or (row.planner if row is not None else "planner")
    with locked_run(run.pk) as locked:
        if locked.scheduler.state.status in FINAL_RUN_STATUSES:
            return
        if locked.scheduler.state.status != "needs_replan":
            return
        locked.scheduler.note_replan(
            kind, reason=reason, facts=facts, actor=actor,
            tokens=row.tokens if row else 0, cost=row.cost if row else 0.0,
            model=row.model if row else "",
        )  # fmt: skip
        if kind in _AUDITED:
            audit(actor, _AUDITED[kind], "run", run.pk, {**facts, "reason": reason,
                  "tokens": row.tokens if row else 0, "cost": row.cost if row else 0.0,
                  "model": row.model if row else ""})  # fmt: skip
