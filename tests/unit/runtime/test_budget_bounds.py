"""Budgets that hold and recovery that ends: agent steps without an estimate reserve the
configured allowance, a run whose budget is exhausted leaves nothing ready or pending and
can be resumed on a new version, and retries after lost leases are counted and bounded."""

from __future__ import annotations

import random

import pytest

from forge.runtime import Scheduler, ToolResult, TransitionRefused, rebuild
from forge.runtime.agent_port import agent_grant
from forge.runtime.reservations import StepAllowance

from .conftest import GATE, approved, compile_graph, plan


def _fan_out(count: int, **budget):
    steps = [
        {"id": f"s{i:02d}", "tools_allowed": ["echo"], "description": f"Summarise supplier {i}"}
        for i in range(count)
    ]
    join = {"id": "total", "tool": "noop", "depends_on": [s["id"] for s in steps]}
    return compile_graph(plan(*steps, join, budget=budget))


def _used(tokens=0, cost=0.0):
    return ToolResult("succeeded", output={}, tokens=tokens, cost=cost, model="scripted")


def test_agent_steps_without_an_estimate_reserve_the_allowance_so_racing_steps_cannot_overspend():
    scheduler = Scheduler(
        _fan_out(20, max_tokens=1000), "run-1", gate=GATE, allowance=StepAllowance(tokens=100)
    )
    scheduler.prepare(approved(scheduler.graph))

    started = scheduler.get_ready()  # every worker asks at once: admission is the guard
    for step_id in started:
        scheduler.done(step_id, _used(tokens=100))

    assert len(started) == 10
    assert scheduler.state.used_tokens == 1000
    assert scheduler.state.status == "budget_exhausted"


@pytest.mark.parametrize("seed", range(20))
def test_racing_agent_steps_never_spend_past_the_budget_in_any_finishing_order(seed):
    rng = random.Random(seed)
    scheduler = Scheduler(
        _fan_out(20, max_tokens=1000, max_cost=2.0),
        "run-1",
        gate=GATE,
        allowance=StepAllowance(tokens=250, cost=0.5),
        max_concurrency=3,
    )
    scheduler.prepare(approved(scheduler.graph))
    running: list[str] = []
    while scheduler.is_active():
        running += scheduler.get_ready()
        if not running:
            break
        step_id = running.pop(rng.randrange(len(running)))
        scheduler.done(step_id, _used(tokens=rng.randint(1, 250), cost=rng.uniform(0, 0.5)))

    assert scheduler.state.used_tokens <= 1000
    assert scheduler.state.used_cost <= 2.0 + 1e-9
    assert scheduler.state.status == "budget_exhausted"


def test_an_agent_step_is_granted_what_it_reserved():
    scheduler = Scheduler(
        _fan_out(3, max_tokens=1000, max_cost=1.0),
        "run-1",
        gate=GATE,
        allowance=StepAllowance(tokens=300, cost=0.25),
    )
    scheduler.prepare(approved(scheduler.graph))
    scheduler.get_ready()

    grant = agent_grant(scheduler.graph, scheduler.state, "s01")

    assert (grant.max_tokens, grant.max_cost) == (300, 0.25)
    assert scheduler.state.used_tokens == 900


def test_an_agent_step_reports_its_own_use_and_is_not_charged_its_allowance():
    scheduler = Scheduler(
        _fan_out(1, max_tokens=1000), "run-1", gate=GATE, allowance=StepAllowance(tokens=400)
    )
    scheduler.prepare(approved(scheduler.graph))
    scheduler.get_ready()

    scheduler.done("s00", _used(tokens=0))

    assert scheduler.state.used_tokens == 0


def test_an_unbudgeted_dimension_reserves_nothing_and_grants_without_limit():
    scheduler = Scheduler(_fan_out(2), "run-1", gate=GATE, allowance=StepAllowance(tokens=400))
    scheduler.prepare(approved(scheduler.graph))

    assert scheduler.get_ready() == ("s00", "s01")
    assert scheduler.state.used_tokens == 0
    assert agent_grant(scheduler.graph, scheduler.state, "s00").max_tokens is None


def test_after_the_budget_is_exhausted_nothing_stays_ready_or_pending():
    scheduler = Scheduler(
        _fan_out(6, max_tokens=250), "run-1", gate=GATE, allowance=StepAllowance(tokens=100)
    )
    scheduler.prepare(approved(scheduler.graph))

    started = scheduler.get_ready()

    assert started == ("s00", "s01")
    assert scheduler.state.status == "budget_exhausted"
    steps = scheduler.state.steps
    assert {sid: steps[sid].status for sid in steps if sid not in started} == {
        "s02": "cancelled",
        "s03": "cancelled",
        "s04": "cancelled",
        "s05": "cancelled",
        "total": "cancelled",
    }
    assert "budget" in steps["total"].error
    assert scheduler.state.count("ready") == scheduler.state.count("pending") == 0
    # the admitted steps still finish and are charged; nothing else starts
    for step_id in started:
        scheduler.done(step_id, _used(tokens=90))
    assert scheduler.get_ready() == ()
    assert not scheduler.is_active()
    assert scheduler.state.used_tokens == 180
    assert rebuild("run-1", scheduler.events) == scheduler.state


def test_a_run_that_exhausted_its_budget_resumes_on_a_new_version_keeping_what_succeeded():
    graph = _fan_out(4, max_tokens=250)
    scheduler = Scheduler(graph, "run-1", gate=GATE, allowance=StepAllowance(tokens=100))
    scheduler.prepare(approved(graph))
    started = scheduler.get_ready()
    with pytest.raises(TransitionRefused):  # a step still runs: its use is not known yet
        scheduler.resume(graph, 2, "olga", approved(graph, version=2))
    for step_id in started:
        scheduler.done(step_id, _used(tokens=100))
    assert scheduler.state.status == "budget_exhausted"

    bigger = _fan_out(4, max_tokens=1000)
    events = scheduler.resume(bigger, 2, "olga", approved(bigger, version=2))

    assert events[0].transition == ("budget_exhausted", "running")
    assert events[0].facts["preserved"] == ["s00", "s01"]
    while scheduler.is_active():
        for step_id in scheduler.get_ready():
            scheduler.done(step_id, _used(tokens=0 if step_id == "total" else 100))
    assert scheduler.state.status == "succeeded"
    assert scheduler.state.used_tokens == 400
    assert scheduler.state.steps["s00"].attempt == 1


def test_retries_after_lost_leases_are_counted_and_bounded():
    graph = compile_graph(
        plan(
            {"id": "read", "tool": "file_read", "args": {"path": "a"}},
            {"id": "report", "tool": "noop", "depends_on": ["read"]},
        )
    )
    scheduler = Scheduler(graph, "run-1", gate=GATE, max_lease_retries=2)
    scheduler.prepare(approved(graph))
    starts = 0
    for _ in range(10):  # a step whose worker dies every time it runs it
        if not scheduler.get_ready():
            break
        starts += 1
        scheduler.interrupt("read", reason="the worker's lease expired")

    assert starts == 3
    step = scheduler.state.steps["read"]
    assert (step.status, step.interruptions) == ("failed", 2)
    assert "3 times" in step.error
    assert scheduler.state.status == "needs_replan"
    assert rebuild("run-1", scheduler.events) == scheduler.state


def test_an_interrupted_attempt_is_charged_what_it_reserved():
    graph = compile_graph(
        plan(
            {"id": "read", "tool": "file_read", "args": {"path": "a"}, "estimate": {"cost": 0.4}},
            budget={"max_cost": 1.0},
        )
    )
    scheduler = Scheduler(graph, "run-1", gate=GATE)
    scheduler.prepare(approved(graph))
    scheduler.get_ready()

    scheduler.interrupt("read")
    scheduler.get_ready()
    scheduler.done("read", ToolResult("succeeded", output={}, cost=0.3))

    assert scheduler.state.used_cost == pytest.approx(0.7)
    assert scheduler.state.status == "succeeded"
