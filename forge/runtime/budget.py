"""A three-dimensional budget: steps, tokens and cost, all checked on every reservation.

The one budget rule (SPEC section 2, seed 001): the Scheduler's admission asks it whether
a step's reservation fits what the run has used, and ``forge.workflow`` hands it out under
the seed's name for ``run_workflow``."""

from __future__ import annotations

from dataclasses import dataclass

from forge.errors import BudgetExceeded

__all__ = ["WorkflowBudget"]


@dataclass
class WorkflowBudget:
    """Limits and what has been used of them. Reaching a limit exactly is allowed."""

    max_steps: int | float
    max_tokens: int | float
    max_cost: float
    used_steps: int = 0
    used_tokens: int = 0
    used_cost: float = 0.0

    def _over(self, steps: int, tokens: int, cost: float) -> tuple[str, ...]:
        if steps < 0 or tokens < 0 or cost < 0:
            raise ValueError(
                f"budget amounts must not be negative (steps={steps}, tokens={tokens}, cost={cost})"
            )
        over = []
        if self.used_steps + steps > self.max_steps:
            over.append("steps")
        if self.used_tokens + tokens > self.max_tokens:
            over.append("tokens")
        if self.used_cost + cost > self.max_cost:
            over.append("cost")
        return tuple(over)

    def can_reserve(self, steps: int, tokens: int, cost: float) -> bool:
        """Whether all three amounts fit at once; ``ValueError`` for a negative amount."""
        return not self._over(steps, tokens, cost)

    def consume(self, steps: int, tokens: int, cost: float) -> None:
        """Use the amounts, or raise ``RuntimeError`` and change no counter."""
        over = self._over(steps, tokens, cost)
        if over:
            raise BudgetExceeded(
                f"budget exceeded on {', '.join(over)}: "
                f"would use {self.used_steps + steps}/{self.max_steps} steps, "
                f"{self.used_tokens + tokens}/{self.max_tokens} tokens, "
                f"{self.used_cost + cost:g}/{self.max_cost:g} cost",
                dimensions=over,
            )
        self.used_steps += steps
        self.used_tokens += tokens
        self.used_cost += cost
