"""Reading an evaluation suite: the example loads whole, and every kind of bad input is
refused with a stable code and the place it concerns, loading nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from forge.evaluation import SCENARIOS, SuiteError, load_suite, read_suite

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "eval"

MINIMAL = """\
schema: forge.eval/v1
name: tiny
cases:
  - id: one
    scenario: normal_completion
    goal: Echo hello
"""


def test_the_seed_suite_covers_the_five_scenarios_of_seed_003():
    suite = read_suite(EXAMPLES / "seed-003.yaml")

    assert suite.name == "seed-003"
    assert {case.scenario for case in suite.cases} == set(SCENARIOS) - {"other"}
    change = suite.case("requirement-change").change
    assert change is not None and change.at.tool == "file_write"
    refusal = suite.case("permission-refusal").outcomes[1]
    assert (refusal.results[0].kind, refusal.results[0].code) == ("refuse", "permission_denied")
    assert [tool.name for tool in suite.tools] == ["erp.update_supplier"]
    assert suite.case("normal-completion").policy.require_approval == ("file_write",)


def test_a_minimal_suite_takes_the_defaults():
    suite = load_suite(MINIMAL)

    [case] = suite.cases
    assert (suite.max_attempts, case.expect.status, case.change, case.outcomes) == (
        3, "succeeded", None, (),
    )  # fmt: skip
    assert case.task == "Echo hello"


def test_constraints_are_part_of_what_the_planner_is_asked():
    suite = load_suite(MINIMAL + "    constraints: [no shell, read only]\n")

    assert suite.cases[0].task == "Echo hello\nConstraints:\n- no shell\n- read only"


def _refused(text: str) -> SuiteError:
    with pytest.raises(SuiteError) as caught:
        load_suite(text)
    return caught.value


@pytest.mark.parametrize(
    ("text", "code", "path"),
    [
        ("cases: [", "suite_not_yaml", ""),
        ("!!python/object:os.system {}", "suite_not_yaml", ""),
        ("- a list", "suite_invalid", ""),
        (MINIMAL.replace("forge.eval/v1", "forge.eval/v9"), "suite_invalid", "schema"),
        (MINIMAL.replace("    goal: Echo hello\n", ""), "suite_invalid", "cases[0]"),
        (MINIMAL.replace("normal_completion", "sunny_day"), "suite_invalid", "cases[0].scenario"),
        (MINIMAL + "    colour: blue\n", "suite_invalid", "cases[0]"),
        (MINIMAL + "    outcomes: [{tool: echo, results: [{ok: 1, fail: no}]}]\n",
         "suite_invalid", "cases[0].outcomes[0].results[0]"),
        (MINIMAL + "    outcomes: [{tool: echo, results: []}]\n",
         "suite_invalid", "cases[0].outcomes[0].results"),
        (MINIMAL + "    outcomes: [{tool: teleport, results: [{ok: {}}]}]\n",
         "unknown_tool", "cases[0].outcomes[0].tool"),
        (MINIMAL + "    expect: {must_not_call: [{tool: rm}]}\n",
         "unknown_tool", "cases[0].expect.must_not_call[0].tool"),
        (MINIMAL + "    change: {at: {tool: file_write}}\n", "suite_invalid", "cases[0].change"),
        (MINIMAL + "    policy: {allow: {compute: echo}}\n", "invalid_policy", "cases[0].policy"),
        (MINIMAL + "  - id: one\n    scenario: replan\n    goal: Again\n",
         "duplicate_case", "cases[1].id"),
        (MINIMAL + "tools: [{name: echo, description: mine, permission_scope: compute}]\n",
         "duplicate_tool", "tools[0].name"),
        (MINIMAL + "tools: [{name: t, description: d, permission_scope: s, "
         "args_schema: {type: 12}}]\n", "suite_invalid", "tools[0].args_schema"),
        (MINIMAL + "max_attempts: 0\n", "suite_invalid", "max_attempts"),
    ],
)  # fmt: skip
def test_bad_input_is_refused_with_its_code_and_place(text, code, path):
    error = _refused(text)

    assert (error.code, error.path) == (code, path)
    assert str(error).startswith(f"{path}: " if path else "")


def test_a_result_with_two_answers_says_to_give_exactly_one():
    error = _refused(MINIMAL + "    outcomes: [{tool: echo, results: [{ok: 1, refuse: no}]}]\n")

    assert "give exactly one of ok, fail or refuse" in str(error)


def test_a_billion_laughs_suite_is_refused_at_once():
    laughs = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
        f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
        for i in range(9)
    )

    assert _refused(laughs).code == "suite_not_yaml"


def test_a_suite_over_the_size_limit_is_refused_unread():
    assert _refused("#" * (3 * 1024 * 1024)).code == "suite_too_large"


def test_a_missing_file_is_unreadable(tmp_path):
    with pytest.raises(SuiteError) as caught:
        read_suite(tmp_path / "nope.yaml")

    assert caught.value.code == "suite_unreadable"
