"""What admission reserves from a run's budget for one step, before it runs.

A step with an estimate reserves its estimate. An agent step (``tools_allowed`` without
``tool``) that has no estimate in a dimension the plan's budget limits reserves the
deployment's ``StepAllowance`` instead (never more than the budget's whole limit): its
model's use cannot be known before it runs, and reserving nothing let racing workers
admit steps the budget could not pay for. The
agent is granted exactly what was reserved (``forge.runtime.agent_port.agent_grant``)
and stops with ``budget_exceeded`` as soon as its use passes it. A tool step reports no
tokens or cost of its own, so without an estimate it reserves, and is charged, nothing.

The bound this gives (docs/ARCHITECTURE.md, "Budgets"): the steps admitted together
never reserve more than the budget has left, so a run's use never passes its budget,
except by the last model turn of an agent step that passes its own allowance (a model
turn cannot be cut short), and that step fails.
"""

from __future__ import annotations

from dataclasses import dataclass

from forge.compiler import ExecutableNode
from forge.plan.document import Budget

__all__ = ["DEFAULT_ALLOWANCE", "StepAllowance", "reservation"]


@dataclass(frozen=True)
class StepAllowance:
    """What an agent step without an estimate reserves, per limited dimension."""

    tokens: int = 20_000
    cost: float = 0.5

    def __post_init__(self) -> None:
        if self.tokens < 0 or self.cost < 0:
            raise ValueError(
                f"a step allowance must not be negative (tokens={self.tokens}, cost={self.cost})"
            )


DEFAULT_ALLOWANCE = StepAllowance()


def reservation(
    node: ExecutableNode, budget: Budget, allowance: StepAllowance
) -> tuple[int, float]:
    """The tokens and cost admission reserves for ``node`` under ``budget``."""
    estimate = node.step.estimate
    tokens, cost = (estimate.tokens, estimate.cost) if estimate else (0, 0.0)
    if node.binding is None:
        # capped by the run's whole limit, so a budget smaller than the allowance still
        # runs its agent steps, one at a time
        if not tokens and budget.max_tokens is not None:
            tokens = min(allowance.tokens, budget.max_tokens)
        if not cost and budget.max_cost is not None:
            cost = min(allowance.cost, budget.max_cost)
    return tokens, cost
