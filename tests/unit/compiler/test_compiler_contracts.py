"""What steps promise: checkable done_when contracts, specific descriptions, and
estimates that fit the budget."""

from __future__ import annotations

from typing import Any

import pytest

from forge.compiler import CompileResult


def found(result: CompileResult, code: str) -> list[dict[str, Any]]:
    return [d.to_data() for d in result.diagnostics if d.code == code]


def warning(code: str, message: str, nodes: list[str]) -> dict[str, Any]:
    return {"code": code, "severity": "warning", "message": message, "nodes": nodes, "edges": []}


def test_a_check_that_is_not_jmespath_is_an_invalid_check(step, compile_plan):
    done_when = {"required_keys": ["facts"], "checks": ["length(facts) > `0`", "facts["]}

    result = compile_plan([step("inspect", done_when=done_when)])

    assert found(result, "invalid_check") == [
        {
            "code": "invalid_check",
            "severity": "error",
            "message": "step 'inspect': done_when check 2 'facts[' is not valid JMESPath: "
            "Invalid jmespath expression: Incomplete expression",
            "nodes": ["inspect"],
            "edges": [],
        }
    ]
    assert result.graph is None


def test_the_seeds_vague_done_when_is_unverifiable(step, compile_plan):
    result = compile_plan([step("report", done_when="确保质量很好")])

    assert found(result, "unverifiable_done_when") == [
        warning(
            "unverifiable_done_when",
            "done_when of step 'report' is vague ('确保质量很好') and has no required_keys or "
            "checks, so no run can verify it",
            ["report"],
        )
    ]
    assert result.graph is not None


def test_a_done_when_without_keys_or_checks_is_unverifiable(step, compile_plan):
    result = compile_plan([step("inspect", done_when="Contracts summarised as facts")])

    assert found(result, "unverifiable_done_when") == [
        warning(
            "unverifiable_done_when",
            "done_when of step 'inspect' has no required_keys or checks, so no run can verify it",
            ["inspect"],
        )
    ]


def test_a_vague_done_when_is_unverifiable_even_with_checks(step, compile_plan):
    done_when = {"description": "Looks good!", "checks": ["length(facts) > `0`"]}

    result = compile_plan([step("inspect", done_when=done_when)])

    assert [d["message"] for d in found(result, "unverifiable_done_when")] == [
        "done_when of step 'inspect' is vague ('Looks good!'), so no run can verify it"
    ]


def test_a_step_without_done_when_draws_only_the_checklist_warning(step, compile_plan):
    result = compile_plan([step("inspect", done_when=None)])

    assert [d.code for d in result.diagnostics] == ["missing_done_when"]


def test_a_specific_done_when_with_required_keys_draws_no_warning(step, compile_plan):
    done_when = {"description": "Contracts summarised", "required_keys": ["facts"]}

    result = compile_plan([step("inspect", done_when=done_when)])

    assert result.diagnostics == ()


@pytest.mark.parametrize(
    "description",
    [
        "Analyze problem",
        "analyze the problem.",
        "Execute task",
        "execute the tasks!",
        "Summarize results",
        "do it",
        "分析问题",
        "执行任务",
        "总结结果。",
        "",
        "  ...  ",
    ],
)
def test_a_vague_description_is_a_vague_step(step, compile_plan, description):
    result = compile_plan([step("a", description=description)])

    assert [d.code for d in result.diagnostics] == ["vague_step"]


def test_a_vague_step_warning_quotes_the_description(step, compile_plan):
    result = compile_plan([step("a", description=" Analyze problem ")])

    assert found(result, "vague_step") == [
        warning(
            "vague_step",
            "step 'a' has a vague description ('Analyze problem'); say what it produces "
            "and from what",
            ["a"],
        )
    ]


def test_a_description_that_says_what_and_from_what_is_not_vague(step, compile_plan):
    result = compile_plan([step("a", description="Analyze the problem reports filed in March")])

    assert result.diagnostics == ()


def test_each_budget_dimension_the_estimates_exceed_is_warned_with_the_excess(step, compile_plan):
    estimate = {"tokens": 60_000, "cost": 0.1}
    steps = [step("a", estimate=estimate), step("b", "a", estimate=estimate)]
    steps.append(step("c", "b", estimate={"tokens": 100_000, "cost": 0.15}))

    result = compile_plan(steps, budget={"max_steps": 2, "max_tokens": 200_000, "max_cost": 0.3})

    assert found(result, "budget_exceeded_statically") == [
        warning("budget_exceeded_statically", "plan has 3 steps, 1 over max_steps 2", []),
        warning(
            "budget_exceeded_statically",
            "step estimates total 220000 tokens, 20000 over max_tokens 200000",
            [],
        ),
        warning(
            "budget_exceeded_statically",
            "step estimates total a cost of 0.35, 0.05 over max_cost 0.3",
            [],
        ),
    ]
    assert result.graph is not None


def test_estimates_that_add_up_to_the_budget_exactly_fit(step, compile_plan):
    steps = [step("a", estimate={"cost": 0.1}), step("b", "a", estimate={"cost": 0.2})]

    result = compile_plan(steps, budget={"max_steps": 2, "max_cost": 0.3})

    assert result.diagnostics == ()


def test_checks_repeated_across_steps_are_judged_for_each_step(step, compile_plan):
    bad = {"required_keys": ["facts"], "checks": ["facts["]}
    good = {"required_keys": ["facts"], "checks": ["length(facts) > `0`"]}

    result = compile_plan(
        [
            step("a", done_when=bad),
            step("b", done_when=dict(bad), depends_on=["a"]),
            step("c", done_when=good, depends_on=["b"]),
            step("d", done_when=dict(good), depends_on=["c"]),
        ]
    )

    assert [d["nodes"] for d in found(result, "invalid_check")] == [["a"], ["b"]]


@pytest.mark.parametrize("text", ["ANALYZE THE PROBLEM.", "  Do It!", "TBD", "Summarise Results"])
def test_a_vague_description_is_found_whatever_its_case(step, compile_plan, text):
    result = compile_plan([step("a", description=text)])

    assert [d["nodes"] for d in found(result, "vague_step")] == [["a"]]


@pytest.mark.parametrize("text", ["Looks GOOD", "ALL DONE.", "Everything Works"])
def test_a_vague_done_when_is_found_whatever_its_case(step, compile_plan, text):
    result = compile_plan([step("a", done_when={"description": text, "checks": ["facts"]})])

    assert [d["message"] for d in found(result, "unverifiable_done_when")] == [
        f"done_when of step 'a' is vague ({text.strip()!r}), so no run can verify it"
    ]


def test_a_vague_wording_pattern_with_a_capital_is_refused_where_it_could_never_match():
    from forge.compiler.vagueness import _compile

    with pytest.raises(ValueError, match="lower case"):
        _compile(("do it", "TBD"), empty=False)
