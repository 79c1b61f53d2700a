"""Asking a planner until its plan compiles, a bounded number of times.

``propose`` asks the planner, compiles its answer, and when the answer is not a plan
document or does not compile, asks again with the problems (``Feedback``: each compile
error, or why the answer was not a document), up to ``max_attempts``. It returns a
``Proposal`` with every attempt (what the planner was told and answered, its problems,
tokens, cost and model), so a person sees the last attempt and why it was refused, and
a transcript keeps the rest. A planner that cannot answer at all (a model timeout, an
unreachable endpoint, a script out of plans) raises ``PlannerFailed`` with that error's
code and the attempts made before it: nothing the planner said is lost.

A caller that shows a person the work in progress passes ``progress`` (told, before each
attempt, its number and the attempts so far) and ``cancelled`` (asked before each
attempt: a question to a model in flight cannot be interrupted, so a cancellation takes
effect between attempts, as ``ProposalCancelled`` with the attempts made).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from forge.compiler import CompileResult
from forge.errors import ForgeError
from forge.plan import PlanDocument, to_data
from forge.planners.llm import PlannerOutputInvalid
from forge.planners.port import Feedback, Observation, PlannerPort, StructuredPlan

__all__ = ["Attempt", "PlannerFailed", "Proposal", "ProposalCancelled", "propose"]

# What a transcript keeps of each text: enough to debug, never a whole large prompt.
TRANSCRIPT_CHARS = 4000


def _cut(text: str, limit: int = TRANSCRIPT_CHARS) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... [{len(text) - limit} more]"


@dataclass(frozen=True)
class Attempt:
    """One question to the planner and its answer. ``code`` is empty for a plan that
    compiles, ``does_not_compile``, or why the answer was not a plan document."""

    number: int
    told: str
    answered: str
    code: str
    problems: tuple[str, ...]
    diagnostics: tuple[Mapping[str, Any], ...] = ()
    tokens: int = 0
    cost: float = 0.0
    model: str = ""

    @property
    def ok(self) -> bool:
        return not self.code

    def to_data(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "told": _cut(self.told),
            "answered": _cut(self.answered),
            "code": self.code,
            "problems": list(self.problems),
            "diagnostics": [dict(d) for d in self.diagnostics],
            "tokens": self.tokens,
            "cost": self.cost,
            "model": self.model,
        }


@dataclass(frozen=True)
class Proposal:
    """The planner's last answer that was a plan document (``plan``, compiled as
    ``compiled``), or none; and every attempt it took."""

    attempts: tuple[Attempt, ...]
    plan: StructuredPlan | None = None
    compiled: CompileResult | None = None

    @property
    def ok(self) -> bool:
        return self.compiled is not None and self.compiled.ok

    @property
    def code(self) -> str:
        """Why the proposal is not usable as it is; empty when it compiles."""
        return "" if self.ok else self.attempts[-1].code

    @property
    def tokens(self) -> int:
        return sum(attempt.tokens for attempt in self.attempts)

    @property
    def cost(self) -> float:
        return sum(attempt.cost for attempt in self.attempts)

    @property
    def model(self) -> str:
        return next((a.model for a in reversed(self.attempts) if a.model), "")


class PlannerFailed(ForgeError, RuntimeError):
    """The planner gave no answer; ``code`` is its error's (``model_timeout``,
    ``model_unreachable``, ``planner_exhausted``, ...), ``attempts`` those made before."""

    code = "planner_failed"

    def __init__(self, message: str, *, code: str, attempts: tuple[Attempt, ...]) -> None:
        super().__init__(message, code=code)
        self.attempts = attempts


class ProposalCancelled(PlannerFailed):
    """The person the planner worked for stopped it; ``attempts`` those made before."""

    code = "cancelled"

    def __init__(self, attempts: tuple[Attempt, ...]) -> None:
        super().__init__(
            f"cancelled after {len(attempts)} attempt(s)", code=self.code, attempts=attempts
        )


def propose(
    planner: PlannerPort,
    task: str,
    observation: Observation,
    compile: Callable[[PlanDocument], CompileResult],
    max_attempts: int = 3,
    *,
    progress: Callable[[int, tuple[Attempt, ...]], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> Proposal:
    """Ask ``planner`` until its plan compiles, at most ``max_attempts`` times; tell
    ``progress`` of each attempt before it is asked, and stop (``ProposalCancelled``)
    when ``cancelled()`` says so before one."""
    if max_attempts < 1:
        raise ValueError("max_attempts must be 1 or more")
    attempts: list[Attempt] = []
    last: tuple[StructuredPlan, CompileResult] | None = None
    feedback: Feedback | None = None
    for number in range(1, max_attempts + 1):
        if cancelled is not None and cancelled():
            raise ProposalCancelled(tuple(attempts))
        if progress is not None:
            progress(number, tuple(attempts))
        asked = replace(observation, feedback=feedback)
        try:
            plan = planner.plan(task, asked)
        except PlannerOutputInvalid as invalid:
            attempt = Attempt(
                number, invalid.told, invalid.answered, invalid.reason_code or invalid.code,
                (invalid.message,), tokens=invalid.tokens, cost=invalid.cost, model=invalid.model,
            )  # fmt: skip
            attempts.append(attempt)
            feedback = Feedback(number, _cut(invalid.answered), attempt.problems)
            continue
        except ForgeError as error:
            raise PlannerFailed(
                f"the planner gave no plan: {error.message}",
                code=error.code,
                attempts=tuple(attempts),
            ) from error
        result = compile(plan.document)
        errors = [d for d in result.diagnostics if d.severity == "error"]
        problems = tuple(_problem(d.to_data()) for d in errors)
        answered = plan.answered or json.dumps(to_data(plan.document), ensure_ascii=False)
        attempts.append(
            Attempt(
                number,
                plan.told,
                answered,
                "" if result.ok else "does_not_compile",
                problems,
                tuple(d.to_data() for d in result.diagnostics),
                tokens=plan.tokens,
                cost=plan.cost,
                model=plan.model,
            )  # fmt: skip
        )
        last = (plan, result)
        if result.ok:
            break
        feedback = Feedback(number, _cut(answered), problems)
    if last is None:
        return Proposal(tuple(attempts))
    return Proposal(tuple(attempts), last[0], last[1])


def _problem(diagnostic: Mapping[str, Any]) -> str:
    nodes = diagnostic.get("nodes") or []
    where = f" (steps {', '.join(nodes)})" if nodes else ""
    return f"[{diagnostic['code']}] {diagnostic['message']}{where}"
