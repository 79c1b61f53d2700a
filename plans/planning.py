"""The deployment's planner (``FORGE_PLANNER``) and what it proposes on a person's behalf.

``deployment_planner()`` is this process's planner, built by the core's
``planner_from_spec`` over the deployment's tools (again when the spec, the endpoint or
the tools change). ``ask`` puts one question to it through the core's bounded retry loop
(``forge.planners.proposals.propose``: an answer that does not compile goes back with its
diagnostics) and ``record`` keeps the transcript as a ``PlannerProposal``, whatever came
of it. ``generate_plan`` is "New plan from a goal": version 1 of a new plan, authored by
the person who asked (so the four-eyes rule keeps them from approving it), made by the
planner, with its rationale as the version's note. Automatic replans (``runs.replanning``)
use ``ask`` and ``record`` the same way.

Errors keep their codes: ``planner_not_configured`` without ``FORGE_PLANNER``, the
model's (``model_timeout``, ``model_unreachable``, ``model_http_error``, ...) when it gave
no answer, ``invalid_plan_output`` when no answer was a plan document. Each failure is
recorded with the request first, and audited, so nothing is lost.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction

from accounts.permissions import ensure_permission
from audit.services import record as audit
from forge.compiler import CompileResult, PerformedSideEffect
from forge.errors import ForgeError
from forge.models.config import Endpoint
from forge.plan import PlanDocument
from forge.planners import Observation, PlannerPort
from forge.planners.config import planner_from_spec
from forge.planners.proposals import Attempt, PlannerFailed, Proposal, propose
from forge.redaction import redact_text
from plans import compilation
from plans.models import PlannerProposal, PlanVersion, ProposalKind, ProposalStatus
from plans.services import create_plan

__all__ = [
    "GenerationFailed",
    "PlannerNotConfigured",
    "Question",
    "ask",
    "configured",
    "deployment_planner",
    "generate_plan",
    "goal_task",
    "planner_name",
    "proposal_data",
    "record",
]

GOAL_CHARS, TEXT_CHARS = 2000, 8000


class PlannerNotConfigured(ForgeError, RuntimeError):
    code = "planner_not_configured"


class GenerationFailed(ForgeError, RuntimeError):
    """The planner proposed no version; ``proposal`` is the recorded transcript's id."""

    code = "planner_failed"

    def __init__(self, message: str, *, code: str, proposal: int) -> None:
        super().__init__(message, code=code)
        self.details = {"proposal": proposal}


def configured() -> bool:
    return bool(settings.FORGE_PLANNER.strip())


_built: tuple[tuple[Any, ...], PlannerPort] | None = None
_lock = threading.Lock()


def deployment_planner() -> PlannerPort:
    """This process's planner (``PlannerNotConfigured`` without ``FORGE_PLANNER``; a bad
    spec or an unreadable script raises the core's ``PlannerSpecError``)."""
    global _built
    spec = settings.FORGE_PLANNER.strip()
    if not spec:
        raise PlannerNotConfigured(
            "no planner is configured: set FORGE_PLANNER to openai:MODEL (an OpenAI-compatible "
            "endpoint at FORGE_PLANNER_BASE_URL) or scripted:FILE, and restart Forge"
        )
    snapshot = compilation.tools()
    base_url = settings.FORGE_PLANNER_BASE_URL or None
    key = (spec, base_url, settings.FORGE_PLANNER_TIMEOUT_SECONDS, id(snapshot))
    with _lock:
        if _built is not None and _built[0] == key:
            return _built[1]
        endpoint = Endpoint.from_env(
            os.environ, base_url=base_url, timeout_s=settings.FORGE_PLANNER_TIMEOUT_SECONDS
        )
        built = planner_from_spec(spec, endpoint, tools=tuple(snapshot.registry))
        _built = (key, built)
        return built


def planner_name(planner: PlannerPort) -> str:
    return str(getattr(planner, "name", "") or settings.FORGE_PLANNER)


def goal_task(goal: str, context: str = "", constraints: str = "") -> str:
    """The task a person's goal, context and constraints make for a planner."""
    parts = [goal.strip()]
    if context.strip():
        parts.append(f"Context: {context.strip()}")
    if constraints.strip():
        parts.append(f"Constraints the plan must keep: {constraints.strip()}")
    return "\n".join(parts)


@dataclass(frozen=True)
class Question:
    """One question for the planner: the task and what it observes, for a person."""

    kind: str
    requested_by: Any
    goal: str
    task: str
    observation: Observation
    performed: tuple[PerformedSideEffect, ...] = ()
    context: str = ""
    constraints: str = ""
    run_id: int | None = None


def ask(planner: PlannerPort, question: Question) -> Proposal | PlannerFailed:
    """The planner's proposal (its answers compiled with the deployment's compiler, with
    the side effects already performed), or why it gave none."""

    def compile_(document: PlanDocument) -> CompileResult:
        return compilation.compile_document(document, question.performed)

    try:
        return propose(
            planner,
            question.task,
            question.observation,
            compile_,
            max_attempts=settings.FORGE_PLANNER_ATTEMPTS,
        )
    except PlannerFailed as failed:
        return failed


def record(
    planner: PlannerPort,
    question: Question,
    outcome: Proposal | PlannerFailed,
    version: PlanVersion | None,
) -> PlannerProposal:
    """Keep the transcript of ``outcome`` (inside the caller's transaction, if any)."""
    attempts: Iterable[Attempt]
    if isinstance(outcome, PlannerFailed):
        attempts, status = outcome.attempts, ProposalStatus.FAILED
        error_code, error = outcome.code, outcome.message
        rationale, tokens, cost, model = "", 0, 0.0, ""
    else:
        attempts = outcome.attempts
        plan = outcome.plan
        if plan is None:
            status, error_code = ProposalStatus.FAILED, "invalid_plan_output"
            error = (
                f"none of its {len(outcome.attempts)} answer(s) was a plan document "
                f"(the last: {outcome.code})"
            )
        elif outcome.ok:
            status, error_code, error = ProposalStatus.PROPOSED, "", ""
        else:
            status, error_code = ProposalStatus.DOES_NOT_COMPILE, "does_not_compile"
            error = f"the plan still did not compile after {len(outcome.attempts)} attempt(s)"
        rationale = plan.rationale if plan is not None else ""
        tokens, cost, model = outcome.tokens, outcome.cost, outcome.model
    kept = [_redacted(attempt.to_data()) for attempt in attempts]
    tokens = tokens or sum(item["tokens"] for item in kept)
    cost = cost or sum(item["cost"] for item in kept)
    return PlannerProposal.objects.create(
        kind=question.kind,
        requested_by=question.requested_by,
        plan=version.plan if version is not None else None,
        version=version,
        run_id=question.run_id,
        goal=redact_text(question.goal),
        context=redact_text(question.context),
        constraints=redact_text(question.constraints),
        planner=planner_name(planner),
        model=model or next((a["model"] for a in reversed(kept) if a["model"]), ""),
        status=status,
        error_code=error_code,
        error=redact_text(error),
        rationale=redact_text(rationale),
        tokens=tokens,
        cost=cost,
        attempts=kept,
    )


def _redacted(attempt: dict[str, Any]) -> dict[str, Any]:
    for key in ("told", "answered"):
        attempt[key] = redact_text(attempt[key])
    attempt["problems"] = [redact_text(problem) for problem in attempt["problems"]]
    return attempt


def generate_plan(
    user: Any, goal: str, *, context: str = "", constraints: str = "", name: str = ""
) -> PlannerProposal:
    """Ask the planner for version 1 of a new plan for ``goal``, authored by ``user``.

    Returns the recorded proposal (``.version`` is the saved version: it compiles, or it
    is the last attempt with its errors). Raises ``GenerationFailed`` with the planner's
    error code when no answer was a plan document, after recording it."""
    ensure_permission(user, "plan.create")
    planner = deployment_planner()
    question = Question(
        ProposalKind.GENERATE,
        user,
        goal.strip()[:GOAL_CHARS],
        goal_task(goal[:GOAL_CHARS], context[:TEXT_CHARS], constraints[:TEXT_CHARS]),
        Observation(),
        context=context[:TEXT_CHARS],
        constraints=constraints[:TEXT_CHARS],
    )
    outcome = ask(planner, question)  # outside any transaction: a model may take its time
    plan = None if isinstance(outcome, PlannerFailed) else outcome.plan
    if plan is None:
        with transaction.atomic():
            row = record(planner, question, outcome, None)
            audit(user.get_username(), "plan.generation_failed", "planner", row.pk, {
                "planner": row.planner, "code": row.error_code, "attempts": len(row.attempts),
                "tokens": row.tokens, "cost": row.cost, "model": row.model,
            })  # fmt: skip
        raise GenerationFailed(
            f"the planner proposed no plan: {row.error} [{row.error_code}]",
            code=row.error_code,
            proposal=row.pk,
        )
    assert not isinstance(outcome, PlannerFailed)
    version = create_plan(
        user,
        (name.strip() or question.goal)[:200],
        plan.document,
        note=plan.rationale or f"proposed by {planner_name(planner)}",
        planner=planner_name(planner),
    )
    with transaction.atomic():
        row = record(planner, question, outcome, version)
        audit(user.get_username(), "plan.generated", "plan", version.plan_id, {
            "plan": version.plan_id, "version": version.number, "proposal": row.pk,
            "planner": row.planner, "status": row.status, "attempts": len(row.attempts),
            "tokens": row.tokens, "cost": row.cost, "model": row.model,
        })  # fmt: skip
    return row


def proposal_data(row: PlannerProposal) -> dict[str, Any]:
    """A proposal as the API answers it and the pages show it."""
    return {
        "id": row.pk, "kind": row.kind, "requested_by": row.requested_by.get_username(),
        "planner": row.planner, "model": row.model, "status": row.status,
        "error_code": row.error_code, "error": row.error, "rationale": row.rationale,
        "tokens": row.tokens, "cost": row.cost, "plan": row.plan_id,
        "version": row.version.number if row.version is not None else None,
        "run": row.run_id, "attempts": row.attempts, "created_at": row.created_at,
    }  # fmt: skip
