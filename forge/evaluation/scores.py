"""The five scores of seed 003 section 8, each a pure function of a case and its trace.

- ``validity``: the planner's first version compiles; 1 on the first answer, 1/n on the
  n-th, 0 when no answer within the suite's ``max_attempts`` compiled.
- ``fidelity``: every call that reached a runner was the started step's planned call
  (its tool and argument hash, or a tool its agent step allows) of the version in force,
  at most one call per start, every step started only after its dependencies succeeded,
  and no preserved step ran again. The share of faithful calls.
- ``replan``: each replan compiles, keeps the constraints of the version it replaces,
  preserves the completed steps, repeats no performed side effect, and fixes the
  failure (the failed call does not fail again; a rejected call is not made again).
  The share of checks passed; not applicable without a replan.
- ``success``: the run ends as expected (status, deliverable and its call, calls that
  must and must not happen, the change of requirement delivered).
- ``cost``: tokens, cost and wall-clock time within the case's bounds, when it has any.

docs/evaluation.md says the same with examples.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from forge.evaluation.suite import Case
from forge.evaluation.trace import CaseTrace, ReplanTrace
from forge.runtime.dependencies import unmet_dependencies
from forge.runtime.events import EventType

__all__ = ["METRICS", "Score", "cost", "fidelity", "replan_quality", "score_case", "success",
           "validity"]  # fmt: skip

METRICS = ("validity", "fidelity", "replan", "success", "cost")


@dataclass(frozen=True)
class Score:
    """``passed`` is None when the score does not apply to the case (no replan, say)."""

    metric: str
    passed: bool | None
    value: float | None
    detail: str
    problems: tuple[str, ...] = ()

    def to_data(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "passed": self.passed,
            "value": None if self.value is None else round(self.value, 4),
            "detail": self.detail,
            "problems": list(self.problems),
        }

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Score:
        value = data.get("value")
        return cls(
            metric=str(data["metric"]),
            passed=None if data.get("passed") is None else bool(data["passed"]),
            value=None if value is None else float(value),
            detail=str(data.get("detail", "")),
            problems=tuple(str(p) for p in data.get("problems", ())),
        )


def score_case(case: Case, trace: CaseTrace) -> tuple[Score, ...]:
    return (
        validity(trace),
        fidelity(trace),
        replan_quality(trace),
        success(case, trace),
        cost(case, trace),
    )


def validity(trace: CaseTrace) -> Score:
    answers = trace.first
    for proposal in answers:
        if proposal.compiled:
            n = proposal.attempt
            detail = "compiled on the first answer" if n == 1 else f"compiled on answer {n}"
            if proposal.warnings:
                detail += f" ({len(proposal.warnings)} warning(s): "
                detail += ", ".join(sorted(set(proposal.warnings))) + ")"
            refused = tuple(e for p in answers[: n - 1] for e in p.errors)
            return Score("validity", True, 1 / n, detail, refused)
    problems = tuple(e for p in answers for e in p.errors)
    detail = f"no answer compiled in {len(answers)} attempt(s)"
    return Score("validity", False, 0.0, detail, problems)


def fidelity(trace: CaseTrace) -> Score:
    if not trace.versions:
        return Score("fidelity", None, None, "nothing ran")
    problems: list[str] = []
    faithful = 0
    status: dict[str, str] = {}
    started: dict[str, Any] = {}  # step id -> its latest step_started event, until called
    preserved: set[str] = set()
    pending_calls = sorted(trace.calls, key=lambda call: call.after_event)
    next_call = 0
    for index in range(len(trace.events) + 1):
        while next_call < len(pending_calls) and pending_calls[next_call].after_event <= index:
            call = pending_calls[next_call]
            next_call += 1
            problem = _unfaithful(trace, call, started.pop(call.step_id, None))
            if problem:
                problems.append(problem)
            else:
                faithful += 1
        if index == len(trace.events):
            break
        event = trace.events[index]
        if event.event_type == EventType.RUN_RESUMED:
            facts = event.facts if isinstance(event.facts, Mapping) else {}
            preserved = set(facts.get("preserved", ()))
            for step_id in facts.get("reset", ()):
                status[step_id] = "pending"
            continue
        if event.step_id is None:
            continue
        if event.event_type == EventType.STEP_STARTED:
            step = _step(trace, event.plan_version, event.step_id)
            waiting = unmet_dependencies(step.depends_on if step else (), status.get)
            if waiting:
                problems.append(f"step {event.step_id!r} started before {', '.join(waiting)} "
                                "succeeded")  # fmt: skip
            if event.step_id in preserved:
                problems.append(f"step {event.step_id!r} ran again though it was preserved")
            started[event.step_id] = event
        if event.step_status:
            status[event.step_id] = event.step_status
    calls = len(trace.calls)
    value = faithful / calls if calls else 1.0
    detail = f"{faithful} of {calls} call(s) as planned" if calls else "no call reached a runner"
    return Score("fidelity", not problems, value, detail, tuple(problems))


def _step(trace: CaseTrace, version: int, step_id: str) -> Any:
    if not 1 <= version <= len(trace.versions):
        return None
    document = trace.versions[version - 1]
    return next((step for step in document.steps if step.id == step_id), None)


def _unfaithful(trace: CaseTrace, call: Any, start: Any) -> str:
    """Why ``call`` was not the planned call of the step start it answers, or ''."""
    where = f"call of {call.tool!r} by step {call.step_id!r}"
    if start is None:
        return f"unplanned {where}: the step had not started (or had made its call)"
    step = _step(trace, start.plan_version, call.step_id)
    if step is None:
        return f"unplanned {where}: no such step in version {start.plan_version}"
    if step.tool is not None:
        if call.tool != step.tool or call.args_hash != start.tool_args_hash:
            return f"{where} is not the call version {start.plan_version} planned"
    elif call.tool not in step.tools_allowed:
        return f"{where}: the agent step allows only {', '.join(step.tools_allowed)}"
    return ""


def replan_quality(trace: CaseTrace) -> Score:
    if not trace.replans:
        return Score("replan", None, None, "no replan was needed")
    checks = passed = 0
    problems: list[str] = []
    for replan in trace.replans:
        for ok, problem in _replan_checks(trace, replan):
            checks += 1
            passed += ok
            text = f"version {replan.version}: {problem}"
            if not ok and text not in problems:  # one line for checks failed for one reason
                problems.append(text)
    detail = f"{passed} of {checks} check(s) over {len(trace.replans)} replan(s)"
    return Score("replan", passed == checks, passed / checks, detail, tuple(problems))


def _replan_checks(trace: CaseTrace, replan: ReplanTrace) -> list[tuple[bool, str]]:
    answers = len(replan.proposals)
    checks = [(replan.compiled, f"no answer compiled in {answers} attempt(s)")]
    checks.append((not replan.drift, "dropped constraints: " + "; ".join(replan.drift)))
    if not replan.resumed:
        why = "the run did not go on with it"
        return [*checks, (False, why), (False, why), (False, why)]
    lost = [step for step in replan.completed if step not in replan.preserved]
    checks.append((not lost, f"completed step(s) not preserved: {', '.join(lost)}"))
    resumed_at = next(
        i for i, e in enumerate(trace.events)
        if e.event_type == EventType.RUN_RESUMED and e.plan_version == replan.version
    )  # fmt: skip
    later = [call for call in trace.calls if call.after_event > resumed_at]
    performed = set(replan.performed)
    repeated = [c for c in later if (c.tool, c.args_hash) in performed]
    repeated_text = ", ".join(f"{c.tool} by {c.step_id}" for c in repeated)
    checks.append(
        (not replan.repeats and not repeated,
         "repeats a side effect: " + ("; ".join(replan.repeats) or repeated_text))
    )  # fmt: skip
    again = [
        call for call in later
        if replan.failed_call == (call.tool, call.args_hash) and (replan.rejected or not call.ok)
    ]  # fmt: skip
    what = "made the rejected call again" if replan.rejected else "the failed call failed again"
    checks.append((not again, f"{what} ({replan.failed_step})"))
    return checks


def success(case: Case, trace: CaseTrace) -> Score:
    expect = case.expect
    problems: list[str] = []
    if trace.status != expect.status:
        why = f" ({trace.stop_reason})" if trace.stop_reason else ""
        problems.append(f"the run ended {trace.status}, not {expect.status}{why}")
    if expect.status == "succeeded" and trace.deliverable is not None:
        if trace.status_of(trace.deliverable) != "succeeded":
            problems.append(f"the deliverable {trace.deliverable!r} did not succeed")
    if expect.deliverable is not None:
        made = [c for c in trace.calls if c.step_id == trace.deliverable and c.ok]
        if not made or not expect.deliverable.matches(made[-1].tool, made[-1].args):
            problems.append(f"the deliverable is not a call like {expect.deliverable.to_data()}")
    for pattern in expect.must_call:
        if not any(c.ok and pattern.matches(c.tool, c.args) for c in trace.calls):
            problems.append(f"no successful call like {pattern.to_data()}")
    for pattern in expect.must_not_call:
        if any(pattern.matches(c.tool, c.args) for c in trace.calls):
            problems.append(f"a call like {pattern.to_data()} was made")
    if trace.change_delivered is False:
        problems.append("the change of requirement never came: no matching call waited for "
                        "approval")  # fmt: skip
    detail = f"ended {trace.status}" + ("" if not problems else f", {len(problems)} problem(s)")
    return Score("success", not problems, 0.0 if problems else 1.0, detail, tuple(problems))


def cost(case: Case, trace: CaseTrace) -> Score:
    expect = case.expect
    tokens = trace.planner_tokens + trace.run_tokens
    spent = trace.planner_cost + trace.run_cost
    seconds = trace.total_ms / 1000
    problems = []
    if expect.max_tokens is not None and tokens > expect.max_tokens:
        problems.append(f"{tokens} tokens, over {expect.max_tokens}")
    if expect.max_cost is not None and spent > expect.max_cost:
        problems.append(f"cost {spent:g}, over {expect.max_cost:g}")
    if expect.max_seconds is not None and seconds > expect.max_seconds:
        problems.append(f"{seconds:.2f} s, over {expect.max_seconds:g} s")
    detail = f"{tokens} tokens, cost {spent:g}, {seconds:.2f} s"
    return Score("cost", not problems, 0.0 if problems else 1.0, detail, tuple(problems))
