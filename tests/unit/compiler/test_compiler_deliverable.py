"""The deliverable: named or inferred, a real step, terminal, and reached by every step."""

from __future__ import annotations

from typing import Any

from forge.compiler import CompileResult


def found(result: CompileResult, code: str) -> list[dict[str, Any]]:
    return [d.to_data() for d in result.diagnostics if d.code == code]


def test_the_only_terminal_step_is_the_deliverable_when_none_is_named(step, compile_plan):
    result = compile_plan([step("inspect"), step("score", "inspect"), step("report", "score")])

    assert result.diagnostics == ()
    assert result.graph is not None
    assert result.graph.deliverable == "report"


def test_several_terminal_steps_and_no_deliverable_is_missing_a_deliverable(step, compile_plan):
    result = compile_plan([step("inspect"), step("score", "inspect"), step("chart", "inspect")])

    assert found(result, "missing_deliverable") == [
        {
            "code": "missing_deliverable",
            "severity": "error",
            "message": "plan has 2 terminal steps; name one as deliverable",
            "nodes": ["score", "chart"],
            "edges": [],
        }
    ]
    assert result.graph is None


def test_a_deliverable_that_is_not_a_step_is_missing(step, compile_plan):
    result = compile_plan([step("inspect")], deliverable="publish")

    assert found(result, "missing_deliverable") == [
        {
            "code": "missing_deliverable",
            "severity": "error",
            "message": "deliverable 'publish' is not a step of this plan",
            "nodes": ["publish"],
            "edges": [],
        }
    ]


def test_a_deliverable_other_steps_depend_on_is_nonterminal(step, compile_plan):
    result = compile_plan(
        [step("inspect"), step("score", "inspect"), step("chart", "inspect", "score")],
        deliverable="inspect",
    )

    assert found(result, "nonterminal_deliverable") == [
        {
            "code": "nonterminal_deliverable",
            "severity": "error",
            "message": "deliverable 'inspect' must be a terminal step, but 'score', 'chart' "
            "depend on it",
            "nodes": ["inspect", "score", "chart"],
            "edges": [["inspect", "score"], ["inspect", "chart"]],
        }
    ]
    assert result.graph is None


def test_steps_the_deliverable_does_not_depend_on_are_listed_in_one_warning(step, compile_plan):
    result = compile_plan(
        [step("inspect"), step("chart"), step("report", "inspect"), step("tweet", "chart")],
        deliverable="report",
    )

    assert result.to_data()["diagnostics"] == [
        {
            "code": "unreachable_deliverable",
            "severity": "warning",
            "message": "2 step(s) do not lead to deliverable 'report' and would run for "
            "nothing: 'chart', 'tweet'",
            "nodes": ["chart", "tweet"],
            "edges": [],
        }
    ]
    assert result.graph is not None
    assert result.graph.deliverable == "report"


def test_a_plan_without_steps_has_nothing_to_deliver(compile_plan):
    result = compile_plan([])

    assert result.to_data() == {
        "ok": False,
        "diagnostics": [
            {
                "code": "missing_deliverable",
                "severity": "error",
                "message": "plan has no steps, so nothing to deliver",
                "nodes": [],
                "edges": [],
            }
        ],
        "graph": None,
        "impact": None,
    }


def test_a_cycle_that_does_not_lead_to_the_only_terminal_deliverable_is_unreachable(
    step, compile_plan
):
    # Only in an acyclic plan does every step lead to a terminal one; here the cycle's
    # steps lead nowhere, though the deliverable is the only terminal step.
    result = compile_plan(
        [step("spin", "turn"), step("turn", "spin"), step("report")], deliverable="report"
    )

    assert [d["nodes"] for d in found(result, "unreachable_deliverable")] == [["spin", "turn"]]


def test_every_step_of_an_acyclic_plan_with_one_terminal_step_leads_to_it(step, compile_plan):
    steps = [step("a"), step("b", "a"), step("c", "a"), step("report", "b", "c")]
    result = compile_plan(steps, deliverable="report")

    assert found(result, "unreachable_deliverable") == []
    assert result.ok
