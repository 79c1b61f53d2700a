"""Re-running a run from chosen steps (issue 25, item 11): a new run of the same version
keeps the recorded outputs of every step not downstream of the chosen ones (they are
never executed again) and runs the chosen steps and their descendants; it passes the
gate as a start does, and steps that need approval wait for it again."""

from __future__ import annotations

import pytest

from forge.runtime import Scheduler, ToolResult, rebuild
from forge.runtime.gate import GateRefused
from forge.runtime.reruns import RerunRefused, plan_rerun

from .conftest import GATE, approved, compile_graph, plan

STEPS = (
    {"id": "fetch", "tool": "echo", "args": {"orders": 48}},
    {"id": "history", "tool": "echo", "args": {"late": 7}, "depends_on": ["fetch"]},
    {"id": "log", "tool": "echo", "args": {"logged": True}, "depends_on": ["fetch"]},
    {"id": "score", "tool": "echo", "args": {"risk": 9}, "depends_on": ["history"]},
    {"id": "report", "tool": "echo", "args": {"done": True}, "depends_on": ["score", "log"]},
)


def drive(scheduler, fail=()):
    """Run every admitted step with a fake executor; the ids it was called for, in order."""
    called = []
    while scheduler.is_active():
        for step_id in scheduler.get_ready():
            called.append(step_id)
            if step_id in fail:
                scheduler.done(step_id, ToolResult("failed", error="the service is down"))
            else:
                output = {"from": step_id, "run": scheduler.state.run_id}
                scheduler.done(step_id, ToolResult("succeeded", output=output))
    return called


def finished(steps=STEPS, **fields):
    graph = compile_graph(plan(*steps, **fields))
    scheduler = Scheduler(graph, "run-1", gate=GATE)
    scheduler.prepare(approved(graph))
    drive(scheduler)
    return graph, scheduler


def test_a_rerun_keeps_what_is_not_downstream_and_never_executes_it():
    graph, old = finished()
    assert old.state.status == "succeeded"

    rerun = plan_rerun(graph, old.state, ["history"])
    new = Scheduler(graph, "run-2", gate=GATE)
    new.prepare(approved(graph), rerun=rerun)
    called = drive(new)

    assert (rerun.chosen, rerun.rerun, rerun.preserved) == (
        ("history",), ("history", "score", "report"), ("fetch", "log"),
    )  # fmt: skip
    assert called == ["history", "score", "report"]
    assert new.state.status == "succeeded"
    for kept in ("fetch", "log"):
        assert new.state.steps[kept].output == old.state.steps[kept].output
        assert new.state.steps[kept].attempt == 0
    assert new.state.steps["score"].output == {"from": "score", "run": "run-2"}
    assert new.state.used_steps == 3  # the kept steps cost this run nothing
    started = new.events[0]
    assert started.facts["rerun_of"] == "run-1"
    assert started.facts["rerun"] == {
        "chosen": ["history"], "steps": ["history", "score", "report"],
        "preserved": ["fetch", "log"], "unfinished": [],
    }  # fmt: skip
    assert [(e.event_type, e.step_id) for e in new.events[1:3]] == [
        ("step_preserved", "fetch"), ("step_preserved", "log"),
    ]  # fmt: skip
    assert rebuild("run-2", new.events) == new.state


def test_several_chosen_steps_rerun_with_the_union_of_their_descendants():
    graph, old = finished()

    rerun = plan_rerun(graph, old.state, ["log", "score", "log"])

    assert rerun.chosen == ("log", "score")
    assert rerun.rerun == ("log", "score", "report")
    assert rerun.preserved == ("fetch", "history")


def test_steps_to_keep_that_did_not_succeed_are_run_again_and_said_so():
    graph = compile_graph(plan(*STEPS))
    old = Scheduler(graph, "run-1", gate=GATE)
    old.prepare(approved(graph))
    drive(old, fail=("history",))
    assert old.state.status == "needs_replan"

    rerun = plan_rerun(graph, old.state, ["report"])
    new = Scheduler(graph, "run-2", gate=GATE)
    new.prepare(approved(graph), rerun=rerun)

    assert rerun.unfinished == ("history", "score")
    assert rerun.rerun == ("history", "score", "report")
    assert rerun.preserved == ("fetch", "log")
    assert drive(new) == ["history", "score", "report"]
    assert new.state.status == "succeeded"


def test_unknown_steps_are_refused_with_their_names():
    graph, old = finished()

    with pytest.raises(RerunRefused) as refused:
        plan_rerun(graph, old.state, ["history", "nope", "gone"])

    assert refused.value.code == "unknown_step"
    assert "'gone', 'nope'" in str(refused.value)
    with pytest.raises(RerunRefused) as empty:
        plan_rerun(graph, old.state, [])
    assert empty.value.code == "no_steps"


def test_a_run_still_in_progress_or_waiting_for_reconciling_is_not_rerun():
    graph = compile_graph(
        plan(
            {"id": "build", "tool": "shell", "args": {"argv": ["make"]}},
            {"id": "ship", "tool": "noop", "depends_on": ["build"]},
        )
    )
    old = Scheduler(graph, "run-1", gate=GATE)
    old.prepare(approved(graph))
    old.get_ready()

    with pytest.raises(RerunRefused) as running:
        plan_rerun(graph, old.state, ["ship"])
    assert running.value.code == "run_in_progress"

    old.interrupt("build")
    old.cancel("olga")
    with pytest.raises(RerunRefused) as unreconciled:
        plan_rerun(graph, old.state, ["ship"])
    assert unreconciled.value.code == "needs_reconciliation"
    assert "'build'" in str(unreconciled.value)


def test_a_rerun_passes_the_gate_as_a_start_does():
    graph, old = finished()
    rerun = plan_rerun(graph, old.state, ["score"])
    new = Scheduler(graph, "run-2", gate=GATE)

    with pytest.raises(GateRefused):
        new.prepare(None, rerun=rerun)
    with pytest.raises(GateRefused) as other_content:
        new.prepare(
            GATE.approve(plan_id="", version=1, content_hash="0" * 64, author="alice",
                         approver="bob"),
            rerun=rerun,
        )  # fmt: skip

    assert other_content.value.code == "content_changed"
    assert new.events == []
    assert new.state.status == "queued"


def test_a_side_effect_step_among_those_rerun_waits_for_approval_again():
    steps = (
        {"id": "draft", "tool": "echo", "args": {"text": "hello"}},
        {"id": "send", "tool": "http_request", "depends_on": ["draft"],
         "args": {"method": "POST", "url": "https://example.com/mail"}},
    )  # fmt: skip
    graph = compile_graph(plan(*steps))
    old = Scheduler(graph, "run-1", gate=GATE)
    old.prepare(approved(graph))
    drive(old)
    old.approve("send", "grace", old.approval_hash("send"))
    drive(old)
    assert old.state.status == "succeeded"

    new = Scheduler(graph, "run-2", gate=GATE)
    new.prepare(approved(graph), rerun=plan_rerun(graph, old.state, ["send"]))

    assert new.state.steps["send"].status == "awaiting_approval"
    assert new.state.status == "awaiting_approval"
    assert new.get_ready() == ()


def test_a_milestone_review_stands_when_its_steps_are_all_kept():
    steps = (
        {"id": "gather", "tool": "echo", "args": {"rows": 3}},
        {"id": "write", "tool": "echo", "args": {"done": True}, "depends_on": ["gather"]},
    )
    milestones = [
        {"id": "facts", "title": "Gather the facts", "steps": ["gather"], "review": True},
        {"id": "report", "steps": ["write"]},
    ]
    graph = compile_graph(plan(*steps, milestones=milestones))
    old = Scheduler(graph, "run-1", gate=GATE)
    old.prepare(approved(graph))
    drive(old)
    old.review_milestone("facts", "grace")
    drive(old)
    assert old.state.status == "succeeded"

    kept = Scheduler(graph, "run-2", gate=GATE)
    kept.prepare(approved(graph), rerun=plan_rerun(graph, old.state, ["write"]))
    again = Scheduler(graph, "run-3", gate=GATE)
    again.prepare(approved(graph), rerun=plan_rerun(graph, old.state, ["gather"]))

    assert drive(kept) == ["write"] and kept.state.status == "succeeded"
    assert drive(again) == ["gather"]
    assert again.state.awaiting_review == ("facts",)
