"""``evaluate``: every case of a suite, run, scored and gathered into a report."""

from __future__ import annotations

import time
from collections.abc import Callable

from forge.evaluation.harness import Clock, PlannerFactory, run_case
from forge.evaluation.report import CaseResult, SuiteReport, case_result
from forge.evaluation.scores import score_case
from forge.evaluation.suite import Suite

__all__ = ["evaluate"]


def evaluate(
    suite: Suite,
    planner: str,
    make_planner: PlannerFactory,
    *,
    clock: Clock = time.perf_counter,
    on_case: Callable[[CaseResult], None] | None = None,
) -> SuiteReport:
    """Run each case of ``suite`` with a fresh planner of ``make_planner`` (named
    ``planner`` in the report), in order; ``on_case`` hears each result as it comes."""
    results = []
    models: list[str] = []
    for case in suite.cases:
        trace = run_case(suite, case, make_planner, clock=clock)
        result = case_result(case, trace, score_case(case, trace))
        models += [p.model for p in trace.proposals if p.model]
        results.append(result)
        if on_case is not None:
            on_case(result)
    model = max(set(models), key=models.count) if models else ""
    return SuiteReport(suite.name, planner, tuple(results), model=model)
