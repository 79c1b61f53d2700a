"""The ``forge.plan/v1`` document as typed, immutable values.

These types say what a plan *is*; ``forge.plan.codec`` turns them into and out of plain
data, and the format modules (JSON, YAML, Mermaid, DOT) sit on top of that.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec

__all__ = [
    "SCHEMA",
    "Budget",
    "DoneWhen",
    "Estimate",
    "Milestone",
    "PlanDocument",
    "ReplanMode",
    "RiskLevel",
    "Step",
]

SCHEMA = "forge.plan/v1"
RiskLevel = Literal["low", "medium", "high"]
RISK_LEVELS: tuple[RiskLevel, ...] = ("low", "medium", "high")
# Who writes the next version when a run needs a replan: a person ("manual"), or the
# deployment's planner on a worker ("auto"); either way the version passes the gate.
ReplanMode = Literal["manual", "auto"]
REPLAN_MODES: tuple[ReplanMode, ...] = ("manual", "auto")


# The values a plan is made of are frozen msgspec structs: a 100,000-step plan holds
# 300,000 of them, and a struct is made in C from its fields (reading a 10,000-step plan
# spent more time building frozen dataclasses than decoding the JSON), slotted, and not
# tracked by the cyclic collector (``gc=False``: plan data, parsed or built, holds no
# cycles). They compare, hash, pickle and print as the frozen dataclasses they replace
# did; ``msgspec.structs.replace`` and ``__struct_fields__`` stand for ``dataclasses``'
# ``replace`` and ``fields``.
class DoneWhen(msgspec.Struct, frozen=True, gc=False):
    """When a step counts as done: a description plus machine checks.

    ``checks`` are JMESPath expressions over the step's output that must be truthy. A
    ``done_when`` given as a bare string is a description without checks.
    """

    description: str = ""
    required_keys: tuple[str, ...] = ()
    checks: tuple[str, ...] = ()

    @property
    def verifiable(self) -> bool:
        return bool(self.required_keys or self.checks)


class Estimate(msgspec.Struct, frozen=True, gc=False):
    """A step's expected consumption, summed by the compiler against the plan's budget."""

    tokens: int = 0
    cost: float = 0.0
    seconds: float | None = None  # how long the step is expected to take; None: unknown


@dataclass(frozen=True)
class Budget:
    """Run-level limits; ``None`` means that dimension is unlimited."""

    max_steps: int | None = None
    max_tokens: int | None = None
    max_cost: float | None = None


class Step(msgspec.Struct, frozen=True, gc=False):
    """One step: a concrete tool call (``tool`` + ``args``) or an agent step limited to
    ``tools_allowed``."""

    id: str
    description: str = ""
    depends_on: tuple[str, ...] = ()
    tool: str | None = None
    args: Mapping[str, Any] = msgspec.field(default_factory=dict)
    tools_allowed: tuple[str, ...] = ()
    done_when: DoneWhen | None = None
    timeout_s: float | None = None
    retries: int = 0
    rollback_hint: str = ""
    estimate: Estimate | None = None


@dataclass(frozen=True)
class Milestone:
    """A named group of steps. With ``review``, the run pauses once every step of the
    milestone has succeeded: no later milestone's step starts until a person other than
    the version's author has looked at the facts so far and let the run continue."""

    id: str
    title: str = ""
    steps: tuple[str, ...] = ()
    review: bool = False


@dataclass(frozen=True)
class PlanDocument:
    goal: str
    steps: tuple[Step, ...]
    schema: str = SCHEMA
    deliverable: str | None = None
    risk_level: RiskLevel = "low"
    requires_approval_before: tuple[str, ...] = ()
    budget: Budget = field(default_factory=Budget)
    max_replans: int = 3
    replan: ReplanMode = "manual"
    milestones: tuple[Milestone, ...] = ()

    def step(self, step_id: str) -> Step:
        for step in self.steps:
            if step.id == step_id:
                return step
        raise KeyError(step_id)

    @property
    def step_ids(self) -> tuple[str, ...]:
        return tuple(step.id for step in self.steps)

    def terminal_step_ids(self) -> tuple[str, ...]:
        """Ids no other step depends on, in document order."""
        depended_on = {dep for step in self.steps for dep in step.depends_on}
        return tuple(step.id for step in self.steps if step.id not in depended_on)
