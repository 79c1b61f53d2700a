"""A ``done_when`` check that cannot be evaluated on an output (a function given a value
of the wrong type, a field that is missing) fails like any false check, naming its
expression, the value it met and why: never a ``JMESPathTypeError`` out of the run."""

from __future__ import annotations

import pytest

from forge.plan import DoneWhen
from forge.runtime import Scheduler, ToolResult
from forge.runtime.contracts import check_output, check_results

from .conftest import GATE, approved, compile_graph, plan


@pytest.mark.parametrize(
    ("check", "output", "met"),
    [
        ("contains(subjects[0], 'x')", {}, "subjects[0] = null"),
        ("contains(supplier, 'ACME')", {"name": "x"}, "supplier = null"),
        ("length(count) > `0`", {"count": 3}, "count = 3"),
        ("sort(items)", {"items": [1, "a"]}, 'items = [1, "a"]'),
    ],
)
def test_a_check_that_cannot_be_evaluated_fails_naming_what_it_met_and_why(check, output, met):
    done_when = DoneWhen(checks=(check,))

    verdict = check_output(done_when, output)

    assert not verdict.valid
    (error,) = verdict.errors
    assert error.startswith(f"check 1 failed: {check} with ")
    assert met in error
    assert "cannot be evaluated: " in error
    assert "invalid type for value" in error or "invalid" in error


def test_the_per_check_results_say_it_failed_and_why():
    done_when = DoneWhen(checks=("contains(supplier, 'ACME')", "name"))

    results = check_results(done_when, {"name": "x"})

    assert [result["passed"] for result in results] == [False, True]
    assert results[0]["error"].startswith("In function contains(), invalid type for value: None")
    assert "error" not in results[1]


def test_the_scheduler_makes_such_a_step_invalid_and_the_run_needs_a_replan():
    graph = compile_graph(
        plan(
            {
                "id": "inspect",
                "tool": "echo",
                "args": {"name": "x"},
                "done_when": {"checks": ["contains(supplier, 'ACME')"]},
            }
        )
    )
    scheduler = Scheduler(graph, "run-1", gate=GATE)
    scheduler.prepare(approved(scheduler.graph))
    scheduler.get_ready()

    events = scheduler.done("inspect", ToolResult("succeeded", output={"name": "x"}))

    assert events[0].event_type == "step_invalid"
    assert "contains(supplier, 'ACME') with supplier = null" in events[0].blocked_reason
    assert scheduler.state.status == "needs_replan"
