"""New plan from a goal: asked in a request, answered on a worker, cancellable.

``start`` records a ``working`` ``PlannerProposal`` for the person who asked and queues
the Django Task ``generate_plan`` in the same transaction (the request answers at once;
a model may take minutes). A worker runs ``answer``: it asks the deployment's planner
through the bounded retry loop (``plans.planning.ask``), writing each attempt to the
proposal as it goes (the page polls ``GET /plans/proposals/{id}``) and checking between
attempts whether the person cancelled. What the planner proposed is saved as version 1
of a new plan, authored by the person who asked and made by the planner, as their
``draft`` (SPEC section 5): they read it in the editor and submit it for review; until
then no approver is asked and it can neither be approved nor run.

``cancel`` marks the proposal ``cancelled`` at once. A question to a model in flight
cannot be interrupted: its answer is discarded, because the worker saves a version only
in the transaction that moves the proposal from ``working`` to its outcome, and a
cancelled proposal is no longer ``working``. So a proposal ends exactly once, and a task
delivered twice asks once.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import transaction
from django.tasks import task
from django.utils import timezone

from accounts.permissions import ensure_permission
from audit.services import record as audit
from forge.errors import ForgeError
from forge.planners import Observation
from forge.planners.proposals import Attempt, PlannerFailed, Proposal, ProposalCancelled
from forge.redaction import redact_text
from plans import planning
from plans.errors import NotYourProposal, ProposalFinished
from plans.models import PlannerProposal, ProposalKind, ProposalStatus
from plans.services import create_plan

__all__ = ["answer", "cancel", "generate_plan", "readable", "start"]

WORKING = ProposalStatus.WORKING


def start(
    user: Any, goal: str, *, context: str = "", constraints: str = "", name: str = ""
) -> PlannerProposal:
    """Record ``user``'s request for a plan for ``goal`` and queue the planner's work.

    A deployment without a usable planner is said now (``planner_not_configured``, or
    the spec's code), before anything is recorded."""
    ensure_permission(user, "plan.create")
    planner = planning.deployment_planner()
    with transaction.atomic():
        row = PlannerProposal.objects.create(
            kind=ProposalKind.GENERATE,
            requested_by=user,
            goal=redact_text(goal.strip()[: planning.GOAL_CHARS]),
            context=redact_text(context[: planning.TEXT_CHARS]),
            constraints=redact_text(constraints[: planning.TEXT_CHARS]),
            name=name.strip()[:200],
            planner=planning.planner_name(planner),
            status=WORKING,
            max_attempts=settings.FORGE_PLANNER_ATTEMPTS,
        )
        audit(user.get_username(), "plan.generation_requested", "planner", row.pk, {
            "proposal": row.pk, "planner": row.planner, "max_attempts": row.max_attempts,
        })  # fmt: skip
        generate_plan.enqueue(row.pk)  # a row of the task queue, in this transaction
    return row


def readable(row: PlannerProposal, user: Any) -> PlannerProposal:
    """``row``, if ``user`` may read it: its requester always; others once it belongs to
    a version or a run, which they see anyway."""
    if row.requested_by_id != user.pk and row.version_id is None and row.run_id is None:
        raise NotYourProposal("this is another person's request to the planner")
    return row


def cancel(row: PlannerProposal, user: Any) -> PlannerProposal:
    """Stop the planner's work on ``row`` for the person who asked; nothing is saved,
    whatever the planner answers afterwards. Cancelling twice is cancelling once."""
    if row.requested_by_id != user.pk:
        raise NotYourProposal("only the person who asked the planner can cancel its work")
    with transaction.atomic():
        stopped = PlannerProposal.objects.filter(pk=row.pk, status=WORKING).update(
            status=ProposalStatus.CANCELLED, finished_at=timezone.now()
        )
        if stopped:
            audit(user.get_username(), "plan.generation_cancelled", "planner", row.pk, {
                "proposal": row.pk, "planner": row.planner,
            })  # fmt: skip
    row.refresh_from_db()
    if row.status != ProposalStatus.CANCELLED:
        raise ProposalFinished(f"the planner already answered: {planning.progress_words(row)}")
    return row


@task()
def generate_plan(proposal_id: int) -> None:
    """Ask the planner for the plan of proposal ``proposal_id`` (``answer``)."""
    answer(proposal_id)


def answer(proposal_id: int) -> None:
    """The worker's side: ask, record each attempt, and save the author's draft unless
    the person cancelled. A proposal no longer ``working`` is left as it is."""
    row = (
        PlannerProposal.objects.select_related("requested_by")
        .filter(pk=proposal_id, status=WORKING)
        .first()
    )
    if row is None:
        return  # cancelled before a worker took it, or answered already
    try:
        planner = planning.deployment_planner()
    except ForgeError as exc:  # the worker's FORGE_PLANNER is unset or unreadable
        _finish(row, PlannerFailed(f"no planner: {exc.message}", code=exc.code, attempts=()))
        return
    question = planning.Question(
        ProposalKind.GENERATE, row.requested_by, row.goal,
        planning.goal_task(row.goal, row.context, row.constraints), Observation(),
        context=row.context, constraints=row.constraints,
    )  # fmt: skip

    def progress(number: int, before: tuple[Attempt, ...]) -> None:
        PlannerProposal.objects.filter(pk=row.pk, status=WORKING).update(
            attempt=number, attempts=planning.kept_attempts(before)
        )

    def cancelled() -> bool:
        return not PlannerProposal.objects.filter(pk=row.pk, status=WORKING).exists()

    # Outside any transaction: a model may take its time.
    outcome = planning.ask(planner, question, progress=progress, cancelled=cancelled)
    if isinstance(outcome, ProposalCancelled):  # keep what it said before it was stopped
        PlannerProposal.objects.filter(pk=row.pk).update(
            attempts=planning.kept_attempts(outcome.attempts)
        )
        return
    _finish(row, outcome, planning.planner_name(planner))


def _finish(row: PlannerProposal, outcome: Proposal | PlannerFailed, planner: str = "") -> None:
    """Record ``outcome`` on ``row`` and save the author's draft, in one transaction
    that first moves the proposal off ``working``: a cancelled one is left alone."""
    fields = planning.outcome_fields(outcome)
    plan = None if isinstance(outcome, PlannerFailed) else outcome.plan
    user = row.requested_by
    with transaction.atomic():
        finished = PlannerProposal.objects.filter(pk=row.pk, status=WORKING).update(
            finished_at=timezone.now(), **fields
        )
        if not finished:
            return  # cancelled while the last answer was on its way: it is discarded
        row.refresh_from_db()
        summary = {
            "proposal": row.pk, "planner": row.planner, "status": row.status,
            "attempts": len(row.attempts), "tokens": row.tokens, "cost": row.cost,
            "model": row.model,
        }  # fmt: skip
        if plan is None:
            summary["code"] = row.error_code
            audit(user.get_username(), "plan.generation_failed", "planner", row.pk, summary)
            return
        version = create_plan(
            user,
            (row.name or row.goal)[:200],
            plan.document,
            note=plan.rationale or f"proposed by {planner}",
            planner=planner,
            submit=False,  # the author's draft: they submit it
        )
        PlannerProposal.objects.filter(pk=row.pk).update(plan=version.plan, version=version)
        audit(user.get_username(), "plan.generated", "plan", version.plan_id, {
            **summary, "plan": version.plan_id, "version": version.number,
            "version_status": version.status,
        })  # fmt: skip
