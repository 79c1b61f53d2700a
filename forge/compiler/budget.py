"""The static budget estimate: a plan's steps counted, and their ``estimate`` tokens and
cost summed, against ``max_steps``, ``max_tokens`` and ``max_cost``.

``estimate_budget`` is the one place these figures are made: the compiler's
``budget_exceeded_statically`` warnings (``check_budget``: one per dimension over its
limit, a warning since estimates are guesses and the run-time budget is what stops a
run), the impact summary's tokens and cost, and the review card all read it, so they
never disagree about what is over. A dimension without a limit is never over.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from forge.compiler.diagnostics import Diagnostic
from forge.plan import PlanDocument

__all__ = ["BudgetEstimate", "BudgetLine", "check_budget", "estimate_budget"]


@dataclass(frozen=True)
class BudgetLine:
    """One dimension: ``name`` (``steps``, ``tokens`` or ``cost``), the estimate and the
    plan's limit (``None``: no limit)."""

    name: str
    estimate: float
    limit: float | None

    @property
    def over(self) -> bool:
        return self.limit is not None and self.estimate > self.limit


@dataclass(frozen=True)
class BudgetEstimate:
    lines: tuple[BudgetLine, ...]  # steps, tokens, cost
    estimated_steps: int  # steps with an estimate
    steps: int

    def line(self, name: str) -> BudgetLine:
        return next(line for line in self.lines if line.name == name)


def estimate_budget(document: PlanDocument) -> BudgetEstimate:
    budget = document.budget
    estimates = [step.estimate for step in document.steps if step.estimate is not None]
    # Rounded to a billionth so that costs of 0.1 and 0.2 are not over a max_cost of 0.3.
    cost = round(math.fsum(estimate.cost for estimate in estimates), 9)
    return BudgetEstimate(
        lines=(
            BudgetLine("steps", len(document.steps), budget.max_steps),
            BudgetLine("tokens", sum(estimate.tokens for estimate in estimates), budget.max_tokens),
            BudgetLine("cost", cost, budget.max_cost),
        ),
        estimated_steps=len(estimates),
        steps=len(document.steps),
    )


def check_budget(document: PlanDocument) -> list[Diagnostic]:
    budget = document.budget
    if budget.max_steps is None and budget.max_tokens is None and budget.max_cost is None:
        return []  # nothing to check against: the estimates need not be summed
    return [
        Diagnostic.of("budget_exceeded_statically", _over_message(line))
        for line in estimate_budget(document).lines
        if line.over
    ]


def _over_message(line: BudgetLine) -> str:
    assert line.limit is not None
    value, limit, name = line.estimate, line.limit, line.name
    if name == "steps":
        return f"plan has {value} steps, {value - limit} over max_steps {limit}"
    if name == "tokens":
        return f"step estimates total {value} tokens, {value - limit} over max_tokens {limit}"
    return f"step estimates total a cost of {value:g}, {value - limit:g} over max_cost {limit:g}"
