"""What happened in one case: every planner answer, every replan, every call that reached
a runner, the run's events and where it ended. The scores (``forge.evaluation.scores``)
read only this, so each can be tested on a trace made by hand."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from forge.evaluation.outcomes import RunnerCall
from forge.plan import PlanDocument
from forge.runtime.events import RunEvent

__all__ = ["CaseTrace", "Proposal", "ReplanTrace"]


@dataclass(frozen=True)
class Proposal:
    """One answer of the planner for version ``version``: compiled or not, and why not
    (each error diagnostic, or the planner's own error, as ``code: message``)."""

    version: int
    attempt: int
    compiled: bool
    errors: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()  # warning diagnostics' codes
    tokens: int = 0
    cost: float = 0.0
    latency_ms: float = 0.0
    model: str = ""
    document: PlanDocument | None = None

    def to_data(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "attempt": self.attempt,
            "compiled": self.compiled,
            "errors": list(self.errors),
            "warnings": list(self.warnings),
            "tokens": self.tokens,
            "cost": self.cost,
            "latency_ms": round(self.latency_ms, 3),
            "model": self.model,
        }


@dataclass(frozen=True)
class ReplanTrace:
    """A replan: what stopped the run (a failed, invalid or rejected step and its call),
    what the planner was told had been done, its answers, and how the run went on."""

    version: int  # the version the planner was asked for
    failed_step: str
    error: str
    rejected: bool  # a person rejected the step (a changed requirement)
    failed_call: tuple[str, str] | None  # (tool, args hash) of the failed step's call
    completed: tuple[str, ...]  # succeeded steps the planner was told about
    performed: tuple[tuple[str, str], ...]  # non-repeatable calls done, (tool, args hash)
    proposals: tuple[Proposal, ...]
    drift: tuple[str, ...] = ()  # constraints the proposal dropped
    repeats: tuple[str, ...] = ()  # the compiler's repeats_side_effect messages
    resumed: bool = False  # the run went on with the proposal
    preserved: tuple[str, ...] = ()  # steps the resumed run kept

    @property
    def compiled(self) -> bool:
        return any(p.compiled for p in self.proposals)

    def to_data(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "failed_step": self.failed_step,
            "error": self.error,
            "rejected": self.rejected,
            "completed": list(self.completed),
            "performed": [list(pair) for pair in self.performed],
            "proposals": [p.to_data() for p in self.proposals],
            "drift": list(self.drift),
            "repeats": list(self.repeats),
            "resumed": self.resumed,
            "preserved": list(self.preserved),
        }


@dataclass(frozen=True)
class CaseTrace:
    case_id: str
    planner: str
    first: tuple[Proposal, ...]  # the answers for version 1
    replans: tuple[ReplanTrace, ...]
    calls: tuple[RunnerCall, ...]
    events: tuple[RunEvent, ...]
    versions: tuple[PlanDocument, ...]  # the versions that ran, in order
    status: str  # the run's status, "not_compiled" or "not_approved"
    stop_reason: str = ""
    deliverable: str | None = None  # the last version's deliverable step
    step_status: tuple[tuple[str, str], ...] = ()  # the last version's steps at the end
    change_delivered: bool | None = None  # None: the case changes no requirement
    run_tokens: int = 0
    run_cost: float = 0.0
    total_ms: float = 0.0

    @property
    def proposals(self) -> tuple[Proposal, ...]:
        return self.first + tuple(p for replan in self.replans for p in replan.proposals)

    @property
    def planner_tokens(self) -> int:
        return sum(p.tokens for p in self.proposals)

    @property
    def planner_cost(self) -> float:
        return sum(p.cost for p in self.proposals)

    @property
    def planning_ms(self) -> float:
        return sum(p.latency_ms for p in self.proposals)

    def status_of(self, step_id: str) -> str | None:
        return dict(self.step_status).get(step_id)
