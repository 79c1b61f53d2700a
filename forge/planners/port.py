"""The planner seam: a task and an observation in, a versioned ``StructuredPlan`` out.

A planner never writes step state, claims a worker or runs a tool; it only proposes a
document, which the GraphCompiler then accepts or refuses. The editor is the human
planner; ``ScriptedPlanner`` and ``LLMPlanner`` are the machine ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from forge.compiler import PerformedSideEffect
from forge.plan import PlanDocument

__all__ = ["Feedback", "Observation", "PlannerPort", "StructuredPlan"]


@dataclass(frozen=True)
class Feedback:
    """Why the planner's previous answer was refused (``forge.planners.proposals``): the
    answer, cut short, and each problem (a compile diagnostic, or why the answer was not
    a plan document), so the next attempt can fix them."""

    attempt: int
    answer: str
    problems: tuple[str, ...]


@dataclass(frozen=True)
class Observation:
    """What a planner sees: for a first plan only the task; for a replan the current
    version, the failed step with its error or contract verdict, the completed steps
    with their outputs, and the side effects that must not be repeated."""

    current: PlanDocument | None = None
    current_version: int | None = None
    failed_step: str | None = None
    error: str = ""
    verdict: Any = None
    completed: Mapping[str, Any] = field(default_factory=dict)
    performed_side_effects: tuple[PerformedSideEffect, ...] = ()
    feedback: Feedback | None = None

    @property
    def is_replan(self) -> bool:
        return self.current is not None


@dataclass(frozen=True)
class StructuredPlan:
    """A proposed plan version: the document, the version it derives from, and why;
    ``tokens``, ``cost`` and ``model`` say what proposing it took (0 for a script);
    ``told`` and ``answered`` are the request the planner was given and its answer, as
    text, for the transcript a person reads when debugging a replan; ``rationale`` is why
    the planner proposes it, in its words, for the reviewer."""

    document: PlanDocument
    parent_version: int | None = None
    reason: str = ""
    planner: str = ""
    tokens: int = 0
    cost: float = 0.0
    model: str = ""
    told: str = ""
    answered: str = ""
    rationale: str = ""


class PlannerPort(Protocol):
    def plan(self, task: str, observation: Observation) -> StructuredPlan: ...
