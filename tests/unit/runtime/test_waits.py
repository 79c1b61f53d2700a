"""A run that needs a person says so (SPEC section 5): while a step waits for approval, a
milestone for its review or an interrupted step for reconciling, the run's
``blocked_reason`` names it and the role that can act. One rule
(``forge.runtime.waits``), applied by the fold, so a rebuilt run says the same."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from forge.runtime import Scheduler, ToolResult, rebuild
from forge.runtime.waits import waiting_reason

from .conftest import GATE, approved, compile_graph, plan

CASES = json.loads((Path(__file__).parents[2] / "fixtures" / "blocked_reasons.json").read_text())[
    "cases"
]
OK = ToolResult("succeeded", output={})
RECONCILE = "step 'build' needs reconciling by an operator: it may have performed its side effect"


@pytest.mark.parametrize("case", CASES, ids=lambda case: case["reason"][:40] or "nothing")
def test_the_reason_names_each_waiting_step_and_who_can_act(case):
    reason = waiting_reason(
        case["approvals"], case["reconciliations"], case["reviews"], case.get("refused", ())
    )

    assert reason == case["reason"]


def started(*steps, **fields):
    graph = compile_graph(plan(*steps, **fields))
    scheduler = Scheduler(graph, "run-1", gate=GATE)
    scheduler.prepare(approved(graph))
    return scheduler


BUILD = {"id": "build", "tool": "shell", "args": {"argv": ["make"]}}


def test_an_interrupted_step_with_nothing_else_to_do_makes_the_run_wait_for_an_operator():
    scheduler = started(BUILD, {"id": "ship", "tool": "noop", "depends_on": ["build"]})
    scheduler.get_ready()

    events = scheduler.interrupt("build")

    assert [(e.event_type, e.transition) for e in events] == [
        ("step_needs_reconciliation", ("running", "needs_reconciliation")),
        ("run_awaiting_approval", ("running", "awaiting_approval")),
    ]
    assert events[1].blocked_reason == RECONCILE
    assert scheduler.state.status == "awaiting_approval"
    assert scheduler.state.blocked_reason == RECONCILE
    assert rebuild("run-1", scheduler.events).blocked_reason == RECONCILE

    scheduler.reconcile("build", True, {"exit_code": 0}, "olga")

    assert scheduler.state.status == "running"
    assert scheduler.state.blocked_reason == ""
    assert scheduler.get_ready() == ("ship",)


def test_an_interrupted_step_is_named_while_another_branch_still_runs():
    scheduler = started(BUILD, {"id": "read", "tool": "noop"}, deliverable="build")
    assert set(scheduler.get_ready()) == {"build", "read"}

    scheduler.interrupt("build")

    assert scheduler.state.status == "running"  # "read" is still running
    assert scheduler.state.blocked_reason == RECONCILE
    scheduler.done("read", OK)
    assert scheduler.state.status == "awaiting_approval"
    assert scheduler.state.blocked_reason == RECONCILE


def test_a_step_waiting_for_approval_names_the_approver_role():
    scheduler = started(
        {"id": "fetch", "tool": "noop"},
        {"id": "publish", "tool": "http_request", "depends_on": ["fetch"],
         "args": {"method": "POST", "url": "https://example.com/board"}},
    )  # fmt: skip
    scheduler.done(*scheduler.get_ready(), OK)

    reason = "step 'publish' waits for approval by an approver who did not write this version"
    assert scheduler.state.status == "awaiting_approval"
    assert scheduler.state.blocked_reason == reason
    assert scheduler.events[-1].blocked_reason == reason
    assert rebuild("run-1", scheduler.events).blocked_reason == reason


def test_a_waiting_step_is_named_even_while_other_steps_run():
    scheduler = started(
        {"id": "slow", "tool": "noop"},
        {"id": "publish", "tool": "http_request",
         "args": {"method": "POST", "url": "https://example.com/board"}},
        deliverable="slow",
    )  # fmt: skip

    assert scheduler.state.status == "running"
    assert scheduler.state.blocked_reason.startswith("step 'publish' waits for approval by")
    scheduler.reject("publish", "grace", "not today")
    assert scheduler.state.status == "needs_replan"
    assert scheduler.state.blocked_reason == "step 'publish' failed"


def test_a_milestone_wait_names_the_milestone_and_the_approver_role():
    scheduler = started(
        {"id": "gather", "tool": "noop"},
        {"id": "write", "tool": "noop", "depends_on": ["gather"]},
        milestones=[
            {"id": "facts", "title": "Gather the facts", "steps": ["gather"], "review": True},
            {"id": "report", "steps": ["write"]},
        ],
    )
    scheduler.done(*scheduler.get_ready(), OK)

    reason = "milestone 'facts' waits for review by an approver who did not write this version"
    assert scheduler.state.blocked_reason == reason
    reached = next(e for e in scheduler.events if e.event_type == "milestone_reached")
    assert reached.blocked_reason == reason
    scheduler.review_milestone("facts", "grace")
    assert scheduler.state.blocked_reason == ""


def test_forge_run_prints_what_the_run_waits_for_and_who_can_act(capsys):
    from forge.cli import EXIT_AWAITING_APPROVAL, _report
    from forge.runtime.local import LocalRunResult

    scheduler = started(BUILD, {"id": "ship", "tool": "noop", "depends_on": ["build"]})
    scheduler.get_ready()
    scheduler.interrupt("build")
    result = LocalRunResult(
        "awaiting_approval", (), scheduler.state, tuple(scheduler.events), (), "stopped"
    )

    assert _report("plan.yaml", result) == EXIT_AWAITING_APPROVAL
    assert f"waiting for a person: {RECONCILE} (stopped)" in capsys.readouterr().out
