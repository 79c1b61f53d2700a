"""The deployment's planner (``FORGE_PLANNER``) and what it proposes on a person's behalf.

``deployment_planner()`` is this process's planner, built by the core's
``planner_from_spec`` over the deployment's tools (again when the spec, the endpoint or
the tools change). ``ask`` puts one question to it through the core's bounded retry loop
(``forge.planners.proposals.propose``: an answer that does not compile goes back with its
diagnostics), telling a caller of each attempt and stopping when the caller cancels;
``record`` keeps the transcript of an answered question as a ``PlannerProposal``,
whatever came of it. "New plan from a goal" asks on a worker (``plans.generation``);
automatic replans (``runs.replanning``) use ``ask`` and ``record`` the same way.

Errors keep their codes: ``planner_not_configured`` without ``FORGE_PLANNER``, the
model's (``model_timeout``, ``model_unreachable``, ``model_http_error``, ...) when it gave
no answer, ``invalid_plan_output`` when no answer was a plan document. Each failure is
recorded with the request first, and audited, so nothing is lost.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from forge.compiler import CompileResult, PerformedSideEffect
from forge.errors import ForgeError
from forge.models.config import Endpoint
from forge.plan import PlanDocument
from forge.planners import Observation, PlannerPort
from forge.planners.config import planner_from_spec
from forge.planners.proposals import Attempt, PlannerFailed, Proposal, propose
from forge.planners.refusals import why_refused
from forge.redaction import redact_text
from plans import compilation
from plans.models import PlannerProposal, PlanVersion, ProposalStatus

__all__ = [
    "PlannerNotConfigured",
    "Question",
    "ask",
    "configured",
    "deployment_planner",
    "goal_task",
    "kept_attempts",
    "outcome_fields",
    "planner_examples",
    "planner_name",
    "progress_words",
    "proposal_data",
    "record",
]

GOAL_CHARS, TEXT_CHARS = 2000, 8000


class PlannerNotConfigured(ForgeError, RuntimeError):
    code = "planner_not_configured"


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


def planner_examples() -> tuple[str, ...]:
    """The goals the deployment's planner says it knows (a planner script's examples;
    none for a model, or when no planner can be built)."""
    try:
        planner = deployment_planner()
    except ForgeError:
        return ()
    return tuple(str(goal) for goal in getattr(planner, "examples", ()))


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


def ask(
    planner: PlannerPort,
    question: Question,
    *,
    progress: Callable[[int, tuple[Attempt, ...]], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> Proposal | PlannerFailed:
    """The planner's proposal (its answers compiled with the deployment's compiler, with
    the side effects already performed), or why it gave none (``ProposalCancelled`` when
    ``cancelled()`` said so between attempts)."""

    def compile_(document: PlanDocument) -> CompileResult:
        return compilation.compile_document(document, question.performed)

    try:
        return propose(
            planner,
            question.task,
            question.observation,
            compile_,
            max_attempts=settings.FORGE_PLANNER_ATTEMPTS,
            progress=progress,
            cancelled=cancelled,
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
        max_attempts=settings.FORGE_PLANNER_ATTEMPTS,
        finished_at=timezone.now(),
        **outcome_fields(outcome),
    )


def outcome_fields(outcome: Proposal | PlannerFailed) -> dict[str, Any]:
    """What a proposal records of ``outcome``: its status, error, rationale, tokens, cost,
    model and the (redacted) attempts."""
    if isinstance(outcome, PlannerFailed):
        status, error_code, error = ProposalStatus.FAILED, outcome.code, outcome.message
        rationale, tokens, cost, model = "", 0, 0.0, ""
    else:
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
    kept = kept_attempts(outcome.attempts)
    return {
        "status": status,
        "error_code": error_code,
        "error": redact_text(error),
        "rationale": redact_text(rationale),
        "tokens": tokens or sum(item["tokens"] for item in kept),
        "cost": cost or sum(item["cost"] for item in kept),
        "model": model or next((a["model"] for a in reversed(kept) if a["model"]), ""),
        "attempt": len(kept),
        "attempts": kept,
    }


def kept_attempts(attempts: Iterable[Attempt]) -> list[dict[str, Any]]:
    """``attempts`` as a transcript keeps them: as data, free text redacted."""
    return [_redacted(attempt.to_data()) for attempt in attempts]


def _redacted(attempt: dict[str, Any]) -> dict[str, Any]:
    for key in ("told", "answered"):
        attempt[key] = redact_text(attempt[key])
    attempt["problems"] = [redact_text(problem) for problem in attempt["problems"]]
    return attempt


def proposal_data(row: PlannerProposal) -> dict[str, Any]:
    """A proposal as the API answers it and the pages show it."""
    finished = row.finished_at or (None if row.status == ProposalStatus.WORKING else row.created_at)
    elapsed = ((finished or timezone.now()) - row.created_at).total_seconds()
    editor = None
    if row.version is not None:
        url = reverse("plans:edit", kwargs={"plan_id": row.version.plan_id})
        editor = f"{url}?version={row.version.number}"
    return {
        "id": row.pk, "kind": row.kind, "requested_by": row.requested_by.get_username(),
        "planner": row.planner, "model": row.model, "status": row.status,
        "error_code": row.error_code, "error": row.error, "rationale": row.rationale,
        "tokens": row.tokens, "cost": row.cost, "plan": row.plan_id,
        "version": row.version.number if row.version is not None else None,
        "editor": editor, "run": row.run_id, "attempt": row.attempt,
        "max_attempts": row.max_attempts, "progress": progress_words(row),
        "elapsed_seconds": round(max(elapsed, 0.0), 1), "attempts": row.attempts,
        "created_at": row.created_at, "finished_at": row.finished_at,
    }  # fmt: skip


def progress_words(row: PlannerProposal) -> str:
    """Where the planner's work stands, for the person waiting ("attempt 2 of 3: the
    last answer had a cycle")."""
    if row.status == ProposalStatus.CANCELLED:
        return "cancelled: no plan was saved"
    if row.status == ProposalStatus.FAILED:
        return f"the planner proposed no plan: {row.error} [{row.error_code}]"
    if row.status == ProposalStatus.DOES_NOT_COMPILE:
        return f"{row.error}: its last attempt is saved with its errors"
    if row.status == ProposalStatus.PROPOSED:
        return "the planner proposed a plan that compiles"
    if row.attempt == 0:
        return "waiting for a worker to ask the planner"
    words = f"attempt {row.attempt} of {row.max_attempts}"
    why = why_refused(row.attempts[-1]) if row.attempts else ""
    return f"{words}: {why}" if why else words
