"""Static budget check: a plan that would overrun its budget before anything fails.

Steps are counted, and their ``estimate`` tokens and cost summed, against ``max_steps``,
``max_tokens`` and ``max_cost``; each dimension over its limit gives one
``budget_exceeded_statically`` warning (a warning, since estimates are guesses and the
run-time budget is what stops a run). A dimension without a limit is not checked.
"""

from __future__ import annotations

import math

from forge.compiler.diagnostics import Diagnostic
from forge.plan import PlanDocument

__all__ = ["check_budget"]


def check_budget(document: PlanDocument) -> list[Diagnostic]:
    budget = document.budget
    found = []
    if budget.max_steps is None and budget.max_tokens is None and budget.max_cost is None:
        return []  # nothing to check against: the estimates need not be summed
    steps = len(document.steps)
    if budget.max_steps is not None and steps > budget.max_steps:
        found.append(
            f"plan has {steps} steps, {steps - budget.max_steps} over max_steps {budget.max_steps}"
        )
    estimates = [step.estimate for step in document.steps if step.estimate is not None]
    tokens = sum(estimate.tokens for estimate in estimates)
    if budget.max_tokens is not None and tokens > budget.max_tokens:
        found.append(
            f"step estimates total {tokens} tokens, "
            f"{tokens - budget.max_tokens} over max_tokens {budget.max_tokens}"
        )
    # Rounded to a billionth so that costs of 0.1 and 0.2 are not over a max_cost of 0.3.
    cost = round(math.fsum(estimate.cost for estimate in estimates), 9)
    if budget.max_cost is not None and cost > budget.max_cost:
        found.append(
            f"step estimates total a cost of {cost:g}, "
            f"{cost - budget.max_cost:g} over max_cost {budget.max_cost:g}"
        )
    return [Diagnostic.of("budget_exceeded_statically", message) for message in found]
