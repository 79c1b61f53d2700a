"""The one approval gate (SPEC section 5): a version runs only when a person other than
its author approved exactly its content; a read-only replan may continue on the
policy's approval; drift always waits for a person. Every path runs steps through the
Scheduler, which refuses to start, resume or admit without the gate's clearance."""

from __future__ import annotations

from dataclasses import replace

import pytest

from forge.compiler import GraphCompiler
from forge.planners import ScriptedPlanner
from forge.runners.base import RunContext, RunnerOutcome
from forge.runners.basic import BASIC_TOOLS, BasicRunner
from forge.runtime import ApprovalSigner, InMemoryRecordStore, Scheduler, ToolExecutor, rebuild
from forge.runtime.gate import ApprovalGate, GateRefused, escalations, replan_needs_person
from forge.runtime.local import LocalRun
from forge.tools import DEFAULT_POLICY, Policy, PolicyEngine, ToolSpec, builtin_registry

from .conftest import GATE, SIGNER, approved, compile_graph, plan

OK_CHECK = {"checks": ["risk <= `10`"]}


def _report(risk: int, **fields):
    return plan(
        {"id": "gather", "tool": "echo", "args": {"facts": [1]}},
        {"id": "score", "tool": "echo", "args": {"risk": risk}, "depends_on": ["gather"],
         "done_when": OK_CHECK},
        {"id": "publish", "tool": "noop", "depends_on": ["score"]},
        **fields,
    )  # fmt: skip


# --- The gate itself -------------------------------------------------------------------


def test_a_persons_approval_of_the_exact_content_clears_the_version():
    graph = compile_graph(_report(1))
    approval = approved(graph)

    assert GATE.clear(graph, approval, plan_id="", version=1) == approval


def test_the_author_cannot_approve_their_own_version():
    graph = compile_graph(_report(1))

    with pytest.raises(GateRefused) as refused:
        GATE.approve(
            plan_id="", version=1, content_hash=graph.content_hash, author="ada", approver="ada"
        )

    assert refused.value.code == "self_approval"


@pytest.mark.parametrize("approver", ["ADA", " ada", "ada\t", "Ada"])
def test_the_author_spelled_another_way_is_still_the_author(approver):
    graph = compile_graph(_report(1))

    with pytest.raises(GateRefused) as refused:
        GATE.approve(
            plan_id="", version=1, content_hash=graph.content_hash, author="ada", approver=approver
        )

    assert refused.value.code == "self_approval"


@pytest.mark.parametrize(("author", "approver"), [("ada", ""), ("ada", "   "), ("", "bob")])
def test_an_approval_needs_named_people_on_both_sides(author, approver):
    graph = compile_graph(_report(1))

    with pytest.raises(GateRefused) as refused:
        GATE.approve(
            plan_id="", version=1, content_hash=graph.content_hash, author=author,
            approver=approver,
        )  # fmt: skip

    assert refused.value.code == "unnamed_person"


def test_a_signed_approval_by_the_author_in_capitals_is_refused_when_cleared():
    graph = compile_graph(_report(1))
    unchecked = ApprovalGate(SIGNER)._signed(
        "", 1, graph.content_hash, "ada", "ADA ", by_policy=False
    )

    with pytest.raises(GateRefused) as refused:
        GATE.clear(graph, unchecked, plan_id="", version=1)

    assert refused.value.code == "self_approval"


@pytest.mark.parametrize(
    ("change", "code"),
    [
        (lambda a, g: None, "not_approved"),
        (lambda a, g: replace(a, author=a.approver), "approval_invalid"),
        (lambda a, g: replace(a, version=2), "approval_mismatch"),
        (lambda a, g: replace(a, signature="0" * 64), "approval_invalid"),
        (lambda a, g: replace(a, content_hash="f" * 64), "approval_invalid"),
    ],
    ids=["none", "author rewritten", "another version", "forged", "hash rewritten"],
)
def test_an_approval_that_is_missing_forged_or_moved_is_refused(change, code):
    graph = compile_graph(_report(1))

    with pytest.raises(GateRefused) as refused:
        GATE.clear(graph, change(approved(graph), graph), plan_id="", version=1)

    assert refused.value.code == code


def test_a_self_approval_signed_with_the_key_is_still_refused():
    # Someone with the key (or a bug) signs an approval whose approver is the author.
    graph = compile_graph(_report(1))
    unchecked = ApprovalGate(SIGNER)._signed(
        "", 1, graph.content_hash, "ada", "ada", by_policy=False
    )

    with pytest.raises(GateRefused) as refused:
        GATE.clear(graph, unchecked, plan_id="", version=1)

    assert refused.value.code == "self_approval"


def test_a_document_changed_after_its_approval_is_refused():
    approval = approved(compile_graph(_report(1)))
    edited = compile_graph(_report(2))

    with pytest.raises(GateRefused) as refused:
        GATE.clear(edited, approval, plan_id="", version=1)

    assert refused.value.code == "content_changed"


def test_another_key_cannot_vouch_for_an_approval():
    graph = compile_graph(_report(1))
    foreign = ApprovalGate(ApprovalSigner(b"somebody-elses-key-0123")).approve(
        plan_id="", version=1, content_hash=graph.content_hash, author="ada", approver="bob"
    )

    with pytest.raises(GateRefused) as refused:
        GATE.clear(graph, foreign, plan_id="", version=1)

    assert refused.value.code == "approval_invalid"


# --- The policy's exception: read-only replans ----------------------------------------------

READ_ONLY = Policy.from_data(
    {
        "allow": {"compute": ["*"], "file_read": ["*"], "file_write": ["*"], "shell": ["*"]},
        "auto_approve_replans": "read_only",
    }
)


def _graphs(parent_steps, child_steps, policy=READ_ONLY, **fields):
    return (
        compile_graph(plan(*parent_steps, **fields), policy),
        compile_graph(plan(*child_steps, **fields), policy),
    )


GATHER = {"id": "gather", "tool": "echo", "args": {"facts": [1]}}


def test_a_replan_that_only_changes_a_side_effect_free_step_may_continue():
    parent, child = _graphs(
        [GATHER, {"id": "score", "tool": "echo", "args": {"risk": 42}, "depends_on": ["gather"]}],
        [GATHER, {"id": "score", "tool": "echo", "args": {"risk": 3}, "depends_on": ["gather"]}],
    )

    approval = GATE.approve_by_policy(READ_ONLY, parent, child, plan_id="", version=2, author="p")

    assert (approval.approver, approval.by_policy) == ("policy", True)
    assert GATE.clear(child, approval, plan_id="", version=2) == approval


@pytest.mark.parametrize(
    ("parent_steps", "child_steps", "reason"),
    [
        (
            [GATHER, {"id": "save", "tool": "file_write", "args": {"path": "a", "content": "1"},
                      "depends_on": ["gather"]}],
            [GATHER, {"id": "save", "tool": "file_write", "args": {"path": "a", "content": "2"},
                      "depends_on": ["gather"]}],
            "it changes step 'save', whose file_write has a write side effect",
        ),
        (
            [GATHER],
            [GATHER, {"id": "look", "tool": "file_read", "args": {"path": "a"},
                      "depends_on": ["gather"]}],
            "it adds step 'look' with tool 'file_read', new to the plan",
        ),
        (
            [GATHER, {"id": "score", "tool": "echo", "args": {}, "depends_on": ["gather"]}],
            [{"id": "score", "tool": "echo", "args": {}}],
            "plan drift: step 'gather', which the deliverable depended on, was removed",
        ),
    ],
    ids=["a write", "a new tool", "drift"],
)  # fmt: skip
def test_a_replan_that_writes_adds_a_tool_or_drifts_needs_a_person(
    parent_steps, child_steps, reason
):
    parent, child = _graphs(parent_steps, child_steps)

    with pytest.raises(GateRefused) as refused:
        GATE.approve_by_policy(READ_ONLY, parent, child, plan_id="", version=2, author="p")

    assert refused.value.code == "needs_person"
    assert reason in refused.value.message


def test_without_the_policys_consent_every_replan_needs_a_person():
    parent, child = _graphs([GATHER], [GATHER], policy=DEFAULT_POLICY)

    assert replan_needs_person(DEFAULT_POLICY, parent, child) == (
        "the policy asks a person to approve every replan",
    )


def test_a_replan_that_drops_a_constraint_is_drift_even_if_it_only_reads():
    parent, child = (
        compile_graph(plan(GATHER, requires_approval_before=["compute"]), READ_ONLY),
        compile_graph(plan(GATHER), READ_ONLY),
    )

    assert replan_needs_person(READ_ONLY, parent, child) == (
        "plan drift: approval before 'compute' is no longer required",
    )


# --- The scheduler enforces it ------------------------------------------------------------


def test_a_run_cannot_start_without_a_cleared_approval_and_writes_nothing():
    graph = compile_graph(_report(1))
    scheduler = Scheduler(graph, "run-1", gate=GATE)

    with pytest.raises(GateRefused):
        scheduler.prepare(None)

    assert scheduler.events == []
    assert scheduler.state.status == "queued"


def test_a_scheduler_without_a_gate_admits_nothing():
    graph = compile_graph(_report(1))

    with pytest.raises(GateRefused):
        Scheduler(graph, "run-1").prepare(approved(graph))


def test_a_run_started_on_an_approval_records_it_in_its_first_event():
    graph = compile_graph(_report(1))
    approval = approved(graph)
    scheduler = Scheduler(graph, "run-1", gate=GATE)

    [started, *_] = scheduler.prepare(approval)

    assert started.facts["approval"] == approval.to_data()
    assert scheduler.state.approval == approval.to_data()


def test_a_step_of_a_document_changed_after_the_run_started_is_never_admitted():
    # A worker rebuilds the run from its events but compiles the version's document as
    # it now stands in the database: edited behind the approval's back.
    first = Scheduler(compile_graph(_report(1)), "run-1", gate=GATE)
    first.prepare(approved(first.graph))
    tampered = compile_graph(_report(1, goal="Send every contract to an outside address"))
    worker = Scheduler(tampered, "run-1", gate=GATE, state=rebuild("run-1", first.events))

    assert worker.get_ready() == ()
    assert worker.state.status == "failed"
    assert "content_changed" in worker.state.blocked_reason
    assert worker.state.count("running") == 0


def test_resume_passes_the_same_gate_as_start():
    scheduler = Scheduler(compile_graph(_report(42)), "run-1", gate=GATE)
    scheduler.prepare(approved(scheduler.graph))
    while scheduler.state.status == "running":
        for step_id in scheduler.get_ready():
            scheduler.done(step_id, _echo(scheduler, step_id))
    assert scheduler.state.status == "needs_replan"
    fixed = compile_graph(_report(3))

    with pytest.raises(GateRefused):
        scheduler.resume(fixed, 2, "editor", None)
    with pytest.raises(GateRefused):
        scheduler.resume(fixed, 2, "editor", approved(scheduler.graph, 2))  # v1's content

    assert scheduler.state.status == "needs_replan"
    scheduler.resume(fixed, 2, "editor", approved(fixed, 2))
    assert scheduler.state.status == "running"


def _echo(scheduler, step_id):
    from forge.runtime import ToolResult

    return ToolResult("succeeded", output=dict(scheduler.graph.nodes[step_id].binding.args))


# --- Local runs (the CLI) ------------------------------------------------------------------


class CountingRunner:
    """The side-effect-free built-ins, counting every call that reaches a runner."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.inner = BasicRunner()

    def run(self, tool: ToolSpec, args, context: RunContext) -> RunnerOutcome:
        self.calls.append(context.step_id)
        return self.inner.run(tool, args, context)


def _local(tmp_path, policy=DEFAULT_POLICY, **options):
    runner = CountingRunner()
    registry = builtin_registry()
    engine = PolicyEngine(policy)
    executor = ToolExecutor(
        registry, engine, InMemoryRecordStore(), dict.fromkeys(BASIC_TOOLS, runner),
        approvals=SIGNER,
    )  # fmt: skip
    return LocalRun(GraphCompiler(registry, engine), executor, tmp_path, **options), runner


def _v1_approval(local, document):
    graph = local.compiler.compile(document).graph
    return GATE.approve(
        plan_id="local", version=1, content_hash=graph.content_hash, author="ada", approver="bob"
    )


def test_a_local_run_without_an_approver_waits_before_anything_runs(tmp_path):
    local, runner = _local(tmp_path)

    result = local.run(_report(1))

    assert (result.status, result.waiting_for) == ("not_approved", "version")
    assert result.stop_reason.startswith("version 1 is not approved")
    assert runner.calls == []


def test_a_planners_version_waits_for_a_person_and_none_of_its_steps_run(tmp_path):
    local, runner = _local(tmp_path, planner=ScriptedPlanner([_report(3)]))
    document = _report(42)

    result = local.run(document, _v1_approval(local, document))

    assert (result.status, result.waiting_for) == ("needs_replan", "version")
    assert "version 2 needs a person's approval" in result.stop_reason
    assert runner.calls == ["gather", "score"]  # v1's steps only
    assert result.state.plan_version == 1


def test_a_read_only_replan_continues_on_the_policys_approval(tmp_path):
    policy = Policy.from_data({"allow": {"compute": ["*"]}, "auto_approve_replans": "read_only"})
    notices = []
    local, runner = _local(
        tmp_path, policy, planner=ScriptedPlanner([_report(3)]), on_approval=notices.append
    )
    document = _report(42)

    result = local.run(document, _v1_approval(local, document))

    assert result.status == "succeeded"
    assert runner.calls == ["gather", "score", "score", "publish"]
    assert [(n.subject, n.approver) for n in notices] == [("version 2", "policy")]
    resumed = next(e for e in result.events if e.event_type == "run_resumed")
    assert resumed.facts["approval"]["by_policy"] is True


def test_a_self_approved_local_plan_never_reaches_a_runner(tmp_path):
    local, runner = _local(tmp_path, approver="ada", author="ada")

    result = local.run(_report(1))

    assert result.status == "not_approved"
    assert "ada wrote version 1 and cannot approve it" in result.stop_reason
    assert runner.calls == []


def test_a_local_run_refuses_a_given_approval_for_other_content(tmp_path):
    local, runner = _local(tmp_path)

    result = local.run(_report(1), _v1_approval(local, _report(2)))

    assert result.status == "not_approved"
    assert "changed since it was approved" in result.stop_reason
    assert runner.calls == []


# --- Escalations: never the policy's to approve ------------------------------------------


@pytest.mark.parametrize(
    ("added", "reason"),
    [
        ({"id": "clean", "tool": "shell", "args": {"argv": ["rm", "-rf", "/"]}},
         "with tool 'shell', new to the plan"),
        ({"id": "read", "tool": "file_read", "args": {"path": "notes.md"}},
         "in scope 'file_read', new to the plan"),
        ({"id": "write", "tool": "file_write", "args": {"path": "x", "content": "y"}},
         "with a write side effect, new to the plan"),
    ],
    ids=["tool", "scope", "side effect"],
)  # fmt: skip
@pytest.mark.parametrize("policy", [READ_ONLY, DEFAULT_POLICY], ids=["read_only", "default"])
def test_a_replan_that_grants_itself_more_always_needs_a_person_whatever_the_policy(
    added, reason, policy
):
    parent, child = _graphs([GATHER], [GATHER, {**added, "depends_on": ["gather"]}], READ_ONLY)

    reasons = replan_needs_person(policy, parent, child)

    assert any(reason in line for line in reasons), reasons
    assert escalations(parent, child)
    with pytest.raises(GateRefused) as refused:
        GATE.approve_by_policy(policy, parent, child, plan_id="", version=2, author="planner")
    assert refused.value.code == "needs_person"
