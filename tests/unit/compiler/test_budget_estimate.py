"""The static budget estimate is made once (``forge.compiler.budget.estimate_budget``):
the ``budget_exceeded_statically`` warnings, the impact summary and the review card all
read the same figures, so they never disagree about what is over."""

from __future__ import annotations

import pytest

from forge.compiler import GraphCompiler
from forge.compiler.budget import BudgetLine, estimate_budget
from forge.plan import from_data
from forge.tools import DEFAULT_POLICY, PolicyEngine, builtin_registry


def _plan(costs, **budget):
    steps = [
        {"id": f"s{n}", "description": f"Echo part {n}", "tool": "echo",
         "depends_on": [f"s{n - 1}"] if n else [], "estimate": {"cost": cost, "tokens": 10}}
        for n, cost in enumerate(costs)
    ]  # fmt: skip
    return from_data({"goal": "g", "budget": budget, "steps": steps})


def _compiled(document):
    return GraphCompiler(builtin_registry(), PolicyEngine(DEFAULT_POLICY)).compile(document)


def test_costs_that_sum_to_the_limit_are_not_over_it_anywhere():
    document = _plan([0.1, 0.2], max_cost=0.3)

    estimate = estimate_budget(document)
    result = _compiled(document)

    assert estimate.line("cost") == BudgetLine("cost", 0.3, 0.3)
    assert not estimate.line("cost").over
    assert "budget_exceeded_statically" not in {d.code for d in result.diagnostics}
    assert result.impact is not None and result.impact.cost == 0.3


@pytest.mark.parametrize(
    ("costs", "budget", "over"),
    [
        ([0.1, 0.2], {"max_cost": 0.3}, set()),
        ([0.2, 0.2], {"max_cost": 0.3}, {"cost"}),
        ([0.1] * 3, {"max_steps": 2}, {"steps"}),
        ([0.1] * 3, {"max_tokens": 29}, {"tokens"}),
        ([0.1] * 3, {}, set()),
    ],
)
def test_the_warnings_are_exactly_the_lines_over_their_limit(costs, budget, over):
    document = _plan(costs, **budget)

    estimate = estimate_budget(document)
    warned = [d for d in _compiled(document).diagnostics if d.code == "budget_exceeded_statically"]

    assert {line.name for line in estimate.lines if line.over} == over
    assert len(warned) == len(over)


def test_the_impact_summary_carries_the_estimate_s_own_figures():
    document = _plan([0.1, 0.25, 1e-10])

    estimate = estimate_budget(document)
    impact = _compiled(document).impact

    assert impact is not None
    assert (impact.tokens, impact.cost, impact.estimated_steps) == (
        estimate.line("tokens").estimate,
        estimate.line("cost").estimate,
        estimate.estimated_steps,
    )
