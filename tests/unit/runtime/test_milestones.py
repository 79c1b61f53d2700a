"""Milestone reviews (issue 15, problem 2): a plan in milestones pauses after each one that
ends in a review; no later step starts until a person lets the run go on, and the pause
is written as events, so a rebuilt run pauses exactly where the stored one did."""

from __future__ import annotations

import pytest

from forge.runtime import Scheduler, ToolResult, TransitionRefused, rebuild

from .conftest import GATE, approved, compile_graph, plan

OK = ToolResult("succeeded", output={"rows": 3})
STEPS = (
    {"id": "gather", "tool": "noop"},
    {"id": "check", "tool": "noop", "depends_on": ["gather"]},
    {"id": "side", "tool": "noop"},
    {"id": "write", "tool": "noop", "depends_on": ["check"]},
    {"id": "publish", "tool": "noop", "depends_on": ["write", "side"]},
)
MILESTONES = [
    {"id": "facts", "title": "Gather the facts", "steps": ["gather", "check", "side"],
     "review": True},
    {"id": "report", "steps": ["write"]},
    {"id": "release", "steps": ["publish"], "review": True},
]  # fmt: skip


def started(milestones=MILESTONES):
    graph = compile_graph(plan(*STEPS, milestones=milestones))
    scheduler = Scheduler(graph, "run-1", gate=GATE)
    scheduler.prepare(approved(graph))
    return scheduler


def drain(scheduler):
    ran = []
    while scheduler.is_active():
        for step_id in scheduler.get_ready():
            ran.append(step_id)
            scheduler.done(step_id, OK)
    return ran


def test_the_run_pauses_after_a_reviewed_milestone_until_a_person_lets_it_go_on():
    scheduler = started()

    assert drain(scheduler) == ["gather", "side", "check"]

    state = scheduler.state
    assert state.status == "awaiting_approval"
    assert state.blocked_reason == (
        "milestone 'facts' waits for review by an approver who did not write this version"
    )
    assert state.awaiting_review == ("facts",)
    assert state.steps["write"].status == "pending"
    reached = [e for e in scheduler.events if e.event_type == "milestone_reached"]
    assert [(e.facts["milestone"], e.facts["steps"]) for e in reached] == [
        ("facts", ["gather", "check", "side"])
    ]

    events = scheduler.review_milestone("facts", "bob", "numbers look right")

    assert [(e.event_type, e.step_id) for e in events] == [
        ("milestone_reviewed", None),
        ("step_ready", "write"),
        ("run_continued", None),
    ]
    assert events[0].actor == "bob" and events[0].facts["comment"] == "numbers look right"
    assert drain(scheduler) == ["write", "publish"]


def test_a_review_on_the_last_milestone_holds_the_runs_success():
    scheduler = started()
    drain(scheduler)
    scheduler.review_milestone("facts", "bob")
    drain(scheduler)

    assert scheduler.state.status == "awaiting_approval"
    assert scheduler.state.awaiting_review == ("release",)
    scheduler.review_milestone("release", "bob")
    assert scheduler.state.status == "succeeded"


def test_a_milestone_without_review_does_not_pause():
    milestones = [{**m, "review": False} for m in MILESTONES]
    scheduler = started(milestones)

    assert drain(scheduler) == ["gather", "side", "check", "write", "publish"]
    assert scheduler.state.status == "succeeded"


def test_a_review_is_refused_before_the_milestone_is_reached_twice_or_unknown():
    scheduler = started()
    with pytest.raises(TransitionRefused, match="have not succeeded yet"):
        scheduler.review_milestone("facts", "bob")
    drain(scheduler)
    scheduler.review_milestone("facts", "bob")
    with pytest.raises(TransitionRefused, match="was reviewed already"):
        scheduler.review_milestone("facts", "bob")
    with pytest.raises(TransitionRefused) as unknown:
        scheduler.review_milestone("nope", "bob")
    assert unknown.value.code == "not_found"


def test_a_rebuilt_run_pauses_where_the_stored_one_did_and_continues_after_review():
    scheduler = started()
    drain(scheduler)

    state = rebuild("run-1", scheduler.events)
    again = Scheduler(scheduler.graph, "run-1", state=state, gate=GATE)

    assert state.awaiting_review == ("facts",) and state.status == "awaiting_approval"
    assert again.get_ready() == ()
    again.review_milestone("facts", "bob")
    assert drain(again) == ["write", "publish"]


def test_a_cancelled_run_takes_no_review():
    scheduler = started()
    drain(scheduler)
    scheduler.cancel("ops")

    with pytest.raises(TransitionRefused, match="run is cancelled"):
        scheduler.review_milestone("facts", "bob")


def test_resume_keeps_a_review_only_for_a_milestone_whose_steps_were_all_preserved():
    scheduler = started()
    drain(scheduler)
    scheduler.review_milestone("facts", "bob")
    scheduler.get_ready()
    scheduler.done("write", ToolResult("failed", error="disk full"))
    assert scheduler.state.status == "needs_replan"
    fixed = compile_graph(
        plan(
            *STEPS[:3],
            {**STEPS[3], "tool": "echo", "args": {"again": True}},
            STEPS[4],
            milestones=MILESTONES,
        )  # fmt: skip
    )

    events = scheduler.resume(fixed, 2, "planner", approved(fixed, 2))

    assert events[0].facts["reviewed"] == ["facts"]
    assert drain(scheduler) == ["write", "publish"]
    assert scheduler.state.awaiting_review == ("release",)
