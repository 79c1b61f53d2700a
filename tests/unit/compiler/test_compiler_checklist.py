"""Seed 003's launch checklist (issue 15, problem 3): a step without ``done_when`` and a
step that changes something without ``rollback_hint`` each draw their own warning, naming
every such step once, with a hint saying how to fix it."""

from __future__ import annotations

import pytest

from forge.plan import from_data
from forge.plan.formats import dump_plan, load_plan
from forge.plan.limits import DEFAULT_LIMITS

WRITE = {"path": "board/review.md", "content": "# Review\n"}


def found(result, code):
    return [d for d in result.diagnostics if d.code == code]


def test_a_step_without_done_when_draws_missing_done_when_with_a_hint(step, compile_plan):
    result = compile_plan([step("inspect", done_when=None)])

    (diagnostic,) = found(result, "missing_done_when")
    assert diagnostic.severity == "warning"
    assert diagnostic.nodes == ("inspect",)
    assert diagnostic.message == (
        "step 'inspect' has no done_when, so a run can only tell that its tool did not fail, "
        "not that it did its job"
    )
    assert diagnostic.hint.startswith("add done_when with required_keys or checks")
    assert diagnostic.to_data()["hint"] == diagnostic.hint
    assert result.ok  # a warning: the plan still compiles


def test_one_diagnostic_names_every_step_without_done_when(step, compile_plan):
    steps = [step(f"s{n}", done_when=None) for n in range(12)]

    result = compile_plan([*steps, step("end", *(f"s{n}" for n in range(12)))])

    (diagnostic,) = found(result, "missing_done_when")
    assert diagnostic.nodes == tuple(f"s{n}" for n in range(12))
    assert diagnostic.message.startswith("12 steps ('s0', 's1',")
    assert "and 2 more) have no done_when" in diagnostic.message


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("file_write", WRITE),
        ("shell", {"argv": ["make", "report"]}),
        ("http_request", {"method": "POST", "url": "https://api.example.com/x"}),
    ],
)
def test_a_write_class_step_without_rollback_hint_draws_missing_rollback_hint(
    step, compile_plan, tool, args
):
    result = compile_plan([step("change", tool=tool, args=args)])

    (diagnostic,) = found(result, "missing_rollback_hint")
    assert (diagnostic.severity, diagnostic.nodes) == ("warning", ("change",))
    assert "has a side effect but no rollback_hint" in diagnostic.message
    assert diagnostic.hint.startswith("add rollback_hint: how a person undoes the change")


def test_a_rollback_hint_silences_it_and_reads_need_none(step, compile_plan):
    result = compile_plan(
        [
            step("write", tool="file_write", args=WRITE, rollback_hint="delete board/review.md"),
            step("get", tool="http_request", args={"method": "GET", "url": "https://a.example"}),
            step("read", tool="file_read", args={"path": "x"}),
        ]
    )

    assert found(result, "missing_rollback_hint") == []


def test_an_agent_step_allowed_a_writing_tool_needs_a_rollback_hint(step, compile_plan):
    agent = step("agent", tool=None, args=None, tools_allowed=["file_read", "file_write"])
    reader = step("reader", tool=None, args=None, tools_allowed=["file_read"])

    result = compile_plan([agent, reader])

    assert [d.nodes for d in found(result, "missing_rollback_hint")] == [("agent",)]


def test_the_two_checks_are_separate_codes(step, compile_plan):
    result = compile_plan([step("w", tool="file_write", args=WRITE, done_when=None)])

    assert [d.code for d in result.warnings] == ["missing_done_when", "missing_rollback_hint"]


def test_rollback_hint_is_an_optional_step_field_that_round_trips():
    data = {
        "goal": "g",
        "steps": [{"id": "a", "depends_on": [], "tool": "noop", "rollback_hint": "nothing"}],
    }

    document = from_data(data)
    assert document.steps[0].rollback_hint == "nothing"
    text = dump_plan(document, "yaml")
    assert load_plan(text, "yaml", DEFAULT_LIMITS) == document
