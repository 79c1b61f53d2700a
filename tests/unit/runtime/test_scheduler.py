import pytest

from forge.runtime import Scheduler, ToolResult, TransitionRefused, approval_hash, rebuild
from forge.runtime.gate import GateRefused
from forge.tools import Policy

from .conftest import GATE, approved, compile_graph, plan

OK = ToolResult("succeeded", output={})


def _delivery_graph(**fields):
    return compile_graph(
        plan(
            {"id": "inspect", "tool": "noop"},
            {"id": "code", "tool": "noop", "depends_on": ["inspect"]},
            {"id": "test", "tool": "noop", "depends_on": ["code"]},
            {"id": "docs", "tool": "noop", "depends_on": ["inspect"]},
            {"id": "publish", "tool": "noop", "depends_on": ["test", "docs"]},
            **fields,
        )
    )


def _statuses(scheduler):
    return {step_id: step.status for step_id, step in scheduler.state.steps.items()}


def test_prepare_starts_the_run_and_makes_the_roots_ready():
    scheduler = Scheduler(_delivery_graph(), "run-1", gate=GATE)

    events = scheduler.prepare(approved(scheduler.graph))

    assert [(e.event_type, e.step_id, e.transition) for e in events] == [
        ("run_started", None, ("queued", "running")),
        ("step_ready", "inspect", ("pending", "ready")),
    ]
    assert [e.seq for e in events] == [1, 2]


def test_a_step_is_ready_only_when_every_dependency_succeeded():
    scheduler = Scheduler(_delivery_graph(), "run-1", gate=GATE)
    scheduler.prepare(approved(scheduler.graph))
    assert scheduler.get_ready() == ("inspect",)
    scheduler.done("inspect", OK)

    assert scheduler.get_ready() == ("code", "docs")
    scheduler.done("code", OK)
    scheduler.done("docs", OK)
    assert scheduler.get_ready() == ("test",)
    assert _statuses(scheduler)["publish"] == "pending"


def test_a_run_whose_steps_all_succeed_succeeds():
    scheduler = Scheduler(_delivery_graph(), "run-1", gate=GATE)
    scheduler.prepare(approved(scheduler.graph))
    while scheduler.is_active():
        for step_id in scheduler.get_ready():
            scheduler.done(step_id, OK)

    assert scheduler.state.status == "succeeded"
    assert scheduler.events[-1].event_type == "run_succeeded"


def test_a_failed_step_stops_admission_and_the_run_needs_a_replan_with_its_reset_set():
    scheduler = Scheduler(_delivery_graph(), "run-1", gate=GATE)
    scheduler.prepare(approved(scheduler.graph))
    scheduler.done(*scheduler.get_ready(), OK)
    scheduler.get_ready()
    scheduler.done("docs", OK)

    events = scheduler.done("code", ToolResult("failed", error="compile error"))

    assert [(e.event_type, e.transition) for e in events] == [
        ("step_failed", ("running", "failed")),
        ("run_needs_replan", ("running", "needs_replan")),
    ]
    assert events[1].facts == {
        "failed_step": "code",
        "reset": ["code", "publish", "test"],
        "preserved": ["docs", "inspect"],
        "error": "compile error",
    }
    assert scheduler.get_ready() == ()
    assert not scheduler.is_active()


def test_an_output_that_breaks_its_contract_makes_the_step_invalid():
    graph = compile_graph(
        plan(
            {
                "id": "inspect",
                "tool": "echo",
                "args": {"facts": []},
                "done_when": {"required_keys": ["facts"], "checks": ["length(facts) > `0`"]},
            }
        )
    )
    scheduler = Scheduler(graph, "run-1", gate=GATE)
    scheduler.prepare(approved(scheduler.graph))
    scheduler.get_ready()

    events = scheduler.done("inspect", ToolResult("succeeded", output={"facts": []}))

    assert events[0].event_type == "step_invalid"
    # A failed check names what it saw, so nobody compares by hand.
    assert events[0].verdict == {
        "valid": False,
        "errors": ["check 1 failed: length(facts) > `0` with length(facts) = 0, facts = []"],
        "required_keys": ["facts"],
        "checks": ["length(facts) > `0`"],
        "results": [
            {
                "check": "length(facts) > `0`",
                "passed": False,
                "values": [["length(facts)", "0"], ["facts", "[]"]],
            }
        ],
    }
    assert events[0].blocked_reason == events[0].verdict["errors"][0]
    assert scheduler.state.status == "needs_replan"


def test_a_jmespath_zero_is_truthy_unlike_in_python():
    graph = compile_graph(
        plan({"id": "count", "tool": "echo", "done_when": {"checks": ["errors"]}})
    )
    scheduler = Scheduler(graph, "run-1", gate=GATE)
    scheduler.prepare(approved(scheduler.graph))
    scheduler.get_ready()

    scheduler.done("count", ToolResult("succeeded", output={"errors": 0}))

    assert scheduler.state.status == "succeeded"


def test_a_step_needing_approval_waits_and_the_run_waits_with_it():
    graph = _approval_graph()
    scheduler = Scheduler(graph, "run-1", gate=GATE)

    scheduler.prepare(approved(scheduler.graph))

    assert _statuses(scheduler)["write"] == "awaiting_approval"
    assert scheduler.state.status == "awaiting_approval"
    assert scheduler.get_ready() == ()


def test_an_approval_for_the_exact_arguments_lets_the_step_start():
    graph = _approval_graph()
    scheduler = Scheduler(graph, "run-1", gate=GATE)
    scheduler.prepare(approved(scheduler.graph))

    events = scheduler.approve("write", "bob", approval_hash(graph.nodes["write"]))

    assert [(e.event_type, e.transition) for e in events] == [
        ("step_approved", ("awaiting_approval", "ready")),
        ("run_continued", ("awaiting_approval", "running")),
    ]
    assert scheduler.get_ready() == ("write",)


def test_an_approval_for_other_arguments_is_refused():
    scheduler = Scheduler(_approval_graph(), "run-1", gate=GATE)
    scheduler.prepare(approved(scheduler.graph))

    with pytest.raises(TransitionRefused) as caught:
        scheduler.approve("write", "bob", "0" * 64)

    assert caught.value.code == "approval_mismatch"
    assert _statuses(scheduler)["write"] == "awaiting_approval"


def test_a_rejected_step_fails_and_the_run_needs_a_replan():
    scheduler = Scheduler(_approval_graph(), "run-1", gate=GATE)
    scheduler.prepare(approved(scheduler.graph))

    scheduler.reject("write", "bob", "wrong file")

    assert _statuses(scheduler)["write"] == "failed"
    assert scheduler.state.steps["write"].error == "rejected by bob: wrong file"
    assert scheduler.state.status == "needs_replan"


def _approval_graph():
    return compile_graph(
        plan(
            {"id": "write", "tool": "file_write", "args": {"path": "a.txt", "content": "x"}},
            requires_approval_before=["file_write"],
        ),
        Policy.allowing(["compute", "file_write"]),
    )


def test_admission_stops_at_the_concurrency_limit():
    steps = [{"id": f"s{i}", "tool": "noop"} for i in range(5)]
    join = {"id": "join", "tool": "noop", "depends_on": [step["id"] for step in steps]}
    graph = compile_graph(plan(*steps, join))
    scheduler = Scheduler(graph, "run-1", max_concurrency=2, gate=GATE)
    scheduler.prepare(approved(scheduler.graph))

    assert scheduler.get_ready() == ("s0", "s1")
    assert scheduler.get_ready() == ()
    scheduler.done("s0", OK)
    assert scheduler.get_ready() == ("s2",)


def test_next_ready_names_the_first_ready_step_not_skipped_without_admitting_it():
    steps = [{"id": f"s{i}", "tool": "noop"} for i in range(4)]
    join = {"id": "join", "tool": "noop", "depends_on": [step["id"] for step in steps]}
    graph = compile_graph(plan(*steps, join))
    scheduler = Scheduler(graph, "run-1", gate=GATE)
    scheduler.prepare(approved(scheduler.graph))

    assert scheduler.next_ready() == "s0"
    assert scheduler.state.steps["s0"].status == "ready"  # asked, not admitted
    assert scheduler.next_ready(skip=lambda step_id: step_id in ("s0", "s1")) == "s2"
    assert scheduler.admit("s0")
    # the skipped step is still offered afterwards; a running one never is
    assert scheduler.next_ready() == "s1"
    assert scheduler.get_ready() == ("s1", "s2", "s3")
    assert scheduler.next_ready() is None


def test_a_budget_that_cannot_admit_the_next_step_exhausts_the_run():
    graph = compile_graph(
        plan(
            {"id": "a", "tool": "noop", "estimate": {"tokens": 60}},
            {"id": "b", "tool": "noop", "depends_on": ["a"], "estimate": {"tokens": 60}},
            budget={"max_tokens": 100},
        )
    )
    scheduler = Scheduler(graph, "run-1", gate=GATE)
    scheduler.prepare(approved(scheduler.graph))
    assert scheduler.get_ready() == ("a",)
    scheduler.done("a", ToolResult("succeeded", output={}, tokens=55))

    assert scheduler.get_ready() == ()
    assert scheduler.state.status == "budget_exhausted"
    assert scheduler.state.used_tokens == 55


def test_reservations_of_running_steps_count_against_the_budget():
    graph = compile_graph(
        plan(
            {"id": "a", "tool": "noop", "estimate": {"cost": 0.6}},
            {"id": "b", "tool": "noop", "estimate": {"cost": 0.6}},
            {"id": "join", "tool": "noop", "depends_on": ["a", "b"]},
            budget={"max_cost": 1.0},
        )
    )
    scheduler = Scheduler(graph, "run-1", gate=GATE)
    scheduler.prepare(approved(scheduler.graph))

    assert scheduler.get_ready() == ("a",)
    assert scheduler.state.used_cost == 0.6
    assert scheduler.state.status == "budget_exhausted"


def test_cancel_stops_admission_and_cancels_what_has_not_started():
    scheduler = Scheduler(_delivery_graph(), "run-1", gate=GATE)
    scheduler.prepare(approved(scheduler.graph))
    scheduler.get_ready()

    scheduler.cancel("olga", "not needed")

    assert scheduler.state.status == "cancelled"
    assert _statuses(scheduler) == {
        "inspect": "running",
        "code": "cancelled",
        "test": "cancelled",
        "docs": "cancelled",
        "publish": "cancelled",
    }
    scheduler.done("inspect", OK)
    assert scheduler.get_ready() == ()
    assert scheduler.state.status == "cancelled"


def test_a_lost_worker_retries_a_repeatable_step():
    graph = compile_graph(plan({"id": "read", "tool": "file_read", "args": {"path": "a"}}))
    scheduler = Scheduler(graph, "run-1", gate=GATE)
    scheduler.prepare(approved(scheduler.graph))
    scheduler.get_ready()

    scheduler.interrupt("read")

    assert _statuses(scheduler) == {"read": "ready"}
    assert scheduler.get_ready() == ("read",)
    assert scheduler.state.steps["read"].attempt == 2


def test_a_lost_worker_leaves_a_non_idempotent_step_for_a_person_to_reconcile():
    graph = compile_graph(
        plan(
            {"id": "build", "tool": "shell", "args": {"argv": ["make"]}},
            {"id": "ship", "tool": "noop", "depends_on": ["build"]},
        )
    )
    scheduler = Scheduler(graph, "run-1", gate=GATE)
    scheduler.prepare(approved(scheduler.graph))
    scheduler.get_ready()

    scheduler.interrupt("build")

    assert _statuses(scheduler) == {"build": "needs_reconciliation", "ship": "pending"}
    assert scheduler.get_ready() == ()
    scheduler.reconcile("build", True, {"exit_code": 0}, "olga")
    assert scheduler.get_ready() == ("ship",)
    assert scheduler.state.steps["build"].output == {"exit_code": 0}


def test_retries_are_automatic_only_for_repeatable_tools():
    graph = compile_graph(
        plan(
            {"id": "read", "tool": "file_read", "args": {"path": "a"}, "retries": 1},
            {"id": "build", "tool": "shell", "args": {"argv": ["make"]}, "retries": 3},
            deliverable="build",
        )
    )
    scheduler = Scheduler(graph, "run-1", max_concurrency=1, gate=GATE)
    scheduler.prepare(approved(scheduler.graph))
    scheduler.get_ready()
    scheduler.done("read", ToolResult("failed", error="busy"))
    assert _statuses(scheduler)["read"] == "ready"
    scheduler.get_ready()
    scheduler.done("read", OK)

    scheduler.get_ready()
    scheduler.done("build", ToolResult("failed", error="exit 2"))

    assert _statuses(scheduler)["build"] == "failed"
    assert scheduler.state.status == "needs_replan"


def test_resume_keeps_preserved_steps_and_never_runs_them_again():
    scheduler = Scheduler(_delivery_graph(), "run-1", gate=GATE)
    scheduler.prepare(approved(scheduler.graph))
    scheduler.done(*scheduler.get_ready(), OK)
    scheduler.get_ready()
    scheduler.done("docs", OK)
    scheduler.done("code", ToolResult("failed", error="compile error"))
    fixed = compile_graph(
        plan(
            {"id": "inspect", "tool": "noop"},
            {"id": "code", "tool": "echo", "args": {"retry": True}, "depends_on": ["inspect"]},
            {"id": "test", "tool": "noop", "depends_on": ["code"]},
            {"id": "docs", "tool": "noop", "depends_on": ["inspect"]},
            {"id": "publish", "tool": "noop", "depends_on": ["test", "docs"]},
        )
    )

    events = scheduler.resume(fixed, 2, "planner", approved(fixed, 2))

    assert events[0].facts["preserved"] == ["inspect", "docs"]
    assert events[0].facts["reset"] == ["code", "test", "publish"]
    started = []
    while scheduler.is_active():
        for step_id in scheduler.get_ready():
            started.append(step_id)
            scheduler.done(step_id, OK)
    assert started == ["code", "test", "publish"]
    assert scheduler.state.status == "succeeded"
    assert scheduler.state.replans == 1
    assert scheduler.state.plan_version == 2


def test_a_preserved_step_whose_content_changed_runs_again():
    scheduler = Scheduler(_delivery_graph(), "run-1", gate=GATE)
    scheduler.prepare(approved(scheduler.graph))
    scheduler.done(*scheduler.get_ready(), OK)
    scheduler.get_ready()
    scheduler.done("docs", OK)
    scheduler.done("code", ToolResult("failed", error="x"))
    changed = compile_graph(
        plan(
            {"id": "inspect", "tool": "noop"},
            {"id": "code", "tool": "noop", "depends_on": ["inspect"]},
            {"id": "docs", "tool": "echo", "args": {"v": 2}, "depends_on": ["inspect"]},
            {"id": "release", "tool": "noop", "depends_on": ["code", "docs"]},
        )
    )

    events = scheduler.resume(changed, 2, "editor", approved(changed, 2))

    assert events[0].facts["preserved"] == ["inspect"]
    assert events[0].facts["removed"] == ["test", "publish"]
    assert events[0].facts["added"] == ["release"]


def test_a_failure_after_the_last_allowed_replan_fails_the_run():
    graph = _delivery_graph(max_replans=0)
    scheduler = Scheduler(graph, "run-1", gate=GATE)
    scheduler.prepare(approved(scheduler.graph))
    scheduler.get_ready()

    scheduler.done("inspect", ToolResult("failed", error="x"))

    assert scheduler.state.status == "failed"
    assert "used all 0 replan(s)" in scheduler.state.blocked_reason


def test_the_state_rebuilt_from_the_events_equals_the_live_state():
    scheduler = Scheduler(_delivery_graph(), "run-1", gate=GATE)
    scheduler.prepare(approved(scheduler.graph))
    scheduler.done(*scheduler.get_ready(), ToolResult("succeeded", output={"n": 1}, tokens=3))
    scheduler.get_ready()
    scheduler.done("code", ToolResult("failed", error="boom", cost=0.5))

    rebuilt = rebuild("run-1", scheduler.events)

    assert rebuilt == scheduler.state


def test_a_scheduler_over_a_rebuilt_state_continues_where_the_first_stopped():
    graph = _delivery_graph()
    first = Scheduler(graph, "run-1", gate=GATE)
    first.prepare(approved(first.graph))
    first.done(*first.get_ready(), OK)

    second = Scheduler(graph, "run-1", state=rebuild("run-1", first.events), gate=GATE)

    assert second.get_ready() == ("code", "docs")
    assert second.events[0].seq == len(first.events) + 1


def test_moves_that_the_status_does_not_allow_are_refused():
    scheduler = Scheduler(_delivery_graph(), "run-1", gate=GATE)
    scheduler.prepare(approved(scheduler.graph))

    with pytest.raises(TransitionRefused):
        scheduler.done("publish", OK)
    with pytest.raises(TransitionRefused):
        scheduler.resume(_delivery_graph(), 2, "x", approved(_delivery_graph(), 2))
    with pytest.raises(TransitionRefused):
        scheduler.reconcile("inspect", True, {}, "x")


def test_a_scheduler_that_observes_another_workers_events_sees_a_join_become_ready():
    steps = [{"id": f"s{i}", "tool": "noop"} for i in range(3)]
    graph = compile_graph(
        plan(*steps, {"id": "join", "tool": "noop", "depends_on": ["s0", "s1", "s2"]})
    )
    mine = Scheduler(graph, "run-1", gate=GATE)
    mine.prepare(approved(mine.graph))
    theirs = Scheduler(graph, "run-1", state=mine.state, gate=GATE)
    assert mine.get_ready() == ("s0", "s1", "s2")
    mine.done("s0", OK)  # counts what join still waits for
    theirs_state_events = []
    theirs.state = mine.state
    for step_id in ("s1", "s2"):
        theirs_state_events += theirs.done(step_id, OK)

    for event in theirs_state_events:
        mine.observe(event)

    assert _statuses(mine)["join"] == "ready"
    assert mine.get_ready() == ("join",)


@pytest.mark.parametrize("actor", ["alice", "ALICE", " alice "])
def test_the_versions_author_cannot_approve_its_steps_in_the_core(actor):
    # approved(...) records alice as the version's author and bob as its approver
    graph = compile_graph(
        plan({"id": "send", "tool": "http_request", "args": {"method": "POST", "url": "https://x"}})
    )
    scheduler = Scheduler(graph, "run-1", gate=GATE)
    scheduler.prepare(approved(scheduler.graph))
    scheduler.get_ready()
    assert scheduler.state.steps["send"].status == "awaiting_approval"

    with pytest.raises(GateRefused) as refused:
        scheduler.approve("send", actor, scheduler.approval_hash("send"))

    assert refused.value.code == "self_approval"
    assert scheduler.state.steps["send"].status == "awaiting_approval"
    with pytest.raises(GateRefused):
        scheduler.reject("send", actor)
    scheduler.approve("send", "carol", scheduler.approval_hash("send"),
                      scheduler.state.steps["send"].preview_hash)  # fmt: skip
    assert scheduler.state.steps["send"].status == "ready"
