"""Planner evaluation (seed 003 section 8): run a planner over a suite of goals with
scripted tool outcomes, under the real compiler, gate and executor, and score each case
for plan validity, execution fidelity, replan quality, end-to-end success and
cost/latency. ``forge eval`` is its command; docs/evaluation.md its manual."""

from forge.evaluation.evaluate import evaluate
from forge.evaluation.harness import EVALUATOR, registry_of, run_case
from forge.evaluation.planners import EvalPlanner, PlannerSpecError, planner_from_spec
from forge.evaluation.report import REPORT_VERSION, CaseResult, ReportInvalid, SuiteReport
from forge.evaluation.scores import METRICS, Score, score_case
from forge.evaluation.suite import SCENARIOS, Case, Suite, SuiteError, load_suite, read_suite
from forge.evaluation.trace import CaseTrace

__all__ = [
    "EVALUATOR",
    "METRICS",
    "REPORT_VERSION",
    "SCENARIOS",
    "Case",
    "CaseResult",
    "CaseTrace",
    "EvalPlanner",
    "PlannerSpecError",
    "ReportInvalid",
    "Score",
    "Suite",
    "SuiteError",
    "SuiteReport",
    "evaluate",
    "load_suite",
    "planner_from_spec",
    "read_suite",
    "registry_of",
    "run_case",
    "score_case",
]
