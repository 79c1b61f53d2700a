"""Data between steps at run time (``forge.runtime.calls`` and the Scheduler): a step's
call is resolved from its ancestors' outputs when it becomes ready; its approval, preview,
events and execution record name the resolved call; a call that cannot be resolved fails
the step before anyone approves it; the executor runs nothing that is not resolved."""

from __future__ import annotations

import hashlib

import pytest

from forge.compiler import GraphCompiler
from forge.plan import canonical_json
from forge.runners import builtin_runners
from forge.runners.base import RunContext
from forge.runtime import (
    InMemoryRecordStore,
    Scheduler,
    ToolExecutor,
    ToolResult,
    TransitionRefused,
    rebuild,
)
from forge.runtime.calls import UnresolvedCall, concrete_call
from forge.runtime.dispatch import StepDispatcher, step_context
from forge.runtime.local import LocalRun
from forge.runtime.previews import step_previewer
from forge.tools import Policy, PolicyEngine, ToolRegistry, ToolSpec, builtin_registry

from .conftest import GATE, SIGNER, approved, compile_graph, plan

POLICY = Policy.allowing(["compute", "file_read", "file_write"])
NOTES = "fix: parser handles empty plans\n"
CONTENT = {"$join": ["# 2.4\n\n", {"$from": "read", "path": "content"}]}


def _sha(args):
    return hashlib.sha256(canonical_json(args).encode()).hexdigest()


def _notes_graph(content=CONTENT, **fields):
    return compile_graph(
        plan(
            {"id": "read", "tool": "file_read", "args": {"path": "CHANGELOG.txt"}},
            {
                "id": "publish",
                "tool": "file_write",
                "depends_on": ["read"],
                "args": {"path": "NOTES.md", "content": content},
            },
            **fields,
        ),
        POLICY,
    )


def _executor(records=None):
    return ToolExecutor(
        builtin_registry(), PolicyEngine(POLICY), records or InMemoryRecordStore(),
        builtin_runners(), approvals=SIGNER,
    )  # fmt: skip


def _run_until_publish(workspace, graph, records=None):
    """Start the run and run ``read`` for real; ``publish`` is then ready or waiting."""
    executor = _executor(records)
    scheduler = Scheduler(
        graph, "run-1", gate=GATE, previewer=step_previewer(executor, "run-1", lambda: workspace)
    )
    scheduler.prepare(approved(graph))
    _run(scheduler, executor, workspace, "read")
    return scheduler, executor


def _run(scheduler, executor, workspace, step_id, token=None):
    [admitted] = scheduler.get_ready()
    assert admitted == step_id
    node = scheduler.graph.nodes[step_id]
    result = StepDispatcher(executor).dispatch(
        node,
        step_context("run-1", node, workspace, scheduler.state.steps[step_id].attempt),
        call=scheduler.call(step_id),
        token=token,
        approval_scopes=scheduler.graph.document.requires_approval_before,
        inputs={},
        grant=None,
    )
    scheduler.done(step_id, result)
    return result


def _waiting_event(scheduler, step_id="publish"):
    [*_, event] = [
        e for e in scheduler.events
        if e.step_id == step_id and e.event_type == "step_awaiting_approval"
    ]  # fmt: skip
    return event


def test_a_call_is_resolved_from_the_output_and_hashed_as_resolved():
    binding = _notes_graph().nodes["publish"].binding

    call = concrete_call(binding, {"read": {"path": "CHANGELOG.txt", "content": NOTES}})

    resolved = {"path": "NOTES.md", "content": "# 2.4\n\n" + NOTES}
    assert call.concrete is True
    assert call.args == resolved
    assert call.args_hash == _sha(resolved)
    assert call.references == binding.references
    assert (call.side_effect, call.approval_reasons) == (
        binding.side_effect,
        binding.approval_reasons,
    )
    assert binding.args["content"] == CONTENT  # the compiled binding is left as written


def test_a_value_of_the_wrong_type_at_run_time_is_invalid_args_naming_its_source():
    binding = _notes_graph({"$from": "read", "path": "content"}).nodes["publish"].binding

    with pytest.raises(UnresolvedCall) as raised:
        concrete_call(binding, {"read": {"path": "CHANGELOG.txt", "content": 42}})

    assert raised.value.code == "invalid_args"
    assert raised.value.message == (
        "arguments of 'file_write': data.content must be string (with the values from read.content)"
    )


def test_an_output_without_the_path_is_an_unresolved_reference():
    binding = _notes_graph({"$from": "read", "path": "content"}).nodes["publish"].binding

    with pytest.raises(UnresolvedCall) as raised:
        concrete_call(binding, {"read": {"path": "CHANGELOG.txt"}})

    assert raised.value.code == "unresolved_reference"
    assert raised.value.message == (
        "argument content refers to read.content, but in step 'read''s output the output has "
        "no 'content' (it is an object of 1 item(s))"
    )


def test_a_resolved_call_may_not_raise_its_side_effect():
    # "force" decides the effect; compiled with it unknown, the call only writes
    purge = ToolSpec(
        "purge", "Removes files", {"type": "object"}, "files", side_effect="delete",
        side_effect_of=lambda args: "delete" if args.get("force") else "write",
    )  # fmt: skip
    registry = ToolRegistry([*builtin_registry(), purge])
    document = plan(
        {"id": "ask", "tool": "echo", "args": {"force": True}},
        {"id": "purge", "tool": "purge", "depends_on": ["ask"],
         "args": {"force": {"$from": "ask", "path": "force"}}},
    )  # fmt: skip
    compiled = GraphCompiler(registry, PolicyEngine(Policy.allowing(["compute", "files"])))
    binding = compiled.compile(document).graph.nodes["purge"].binding
    assert binding.side_effect == "write"

    with pytest.raises(UnresolvedCall) as raised:
        concrete_call(binding, {"ask": {"force": True}})

    assert raised.value.code == "side_effect_changed"
    assert concrete_call(binding, {"ask": {"force": False}}).side_effect == "write"


def test_the_executor_refuses_a_binding_whose_references_are_not_resolved(tmp_path):
    records = InMemoryRecordStore()
    binding = _notes_graph().nodes["publish"].binding

    result = _executor(records).execute(binding, RunContext("run-1", "publish", tmp_path, 5.0))

    assert (result.status, result.error_code) == ("failed", "unresolved_reference")
    assert records.records[0].status == "refused"
    assert not (tmp_path / "NOTES.md").exists()


def test_a_run_writes_what_the_earlier_step_read_and_its_events_and_record_name_the_resolved_call(
    tmp_path,
):
    (tmp_path / "CHANGELOG.txt").write_text(NOTES)
    records = InMemoryRecordStore()
    scheduler, executor = _run_until_publish(tmp_path, _notes_graph(), records)

    result = _run(scheduler, executor, tmp_path, "publish")

    assert result.succeeded, result.error
    assert (tmp_path / "NOTES.md").read_text() == "# 2.4\n\n" + NOTES
    resolved_hash = _sha({"path": "NOTES.md", "content": "# 2.4\n\n" + NOTES})
    assert [
        (e.event_type, e.tool_args_hash) for e in scheduler.events if e.step_id == "publish"
    ] == [
        ("step_ready", resolved_hash),
        ("step_started", resolved_hash),
        ("step_succeeded", resolved_hash),
    ]
    assert records.records[-1].args_hash == resolved_hash
    assert scheduler.state.status == "succeeded"


def test_a_step_waiting_for_approval_shows_and_binds_the_resolved_values(tmp_path):
    (tmp_path / "CHANGELOG.txt").write_text(NOTES)
    graph = _notes_graph(requires_approval_before=["file_write"])

    scheduler, _ = _run_until_publish(tmp_path, graph)

    event = _waiting_event(scheduler)
    resolved_hash = _sha({"path": "NOTES.md", "content": "# 2.4\n\n" + NOTES})
    assert event.tool_args_hash == resolved_hash
    assert scheduler.approval_hash("publish") == resolved_hash
    preview = event.facts["preview"]
    assert preview["kind"] == "file_write"
    assert preview["text"].startswith(
        "values from earlier steps:\n"
        "  content <- $join of read.content (text of 39 characters)\n"
        "--- /dev/null\n+++ b/NOTES.md\n"
    )
    assert "+# 2.4\n+\n+fix: parser handles empty plans\n" in preview["text"]
    assert not (tmp_path / "NOTES.md").exists()


def test_an_approval_for_the_arguments_as_written_is_refused(tmp_path):
    (tmp_path / "CHANGELOG.txt").write_text(NOTES)
    scheduler, _ = _run_until_publish(
        tmp_path, _notes_graph(requires_approval_before=["file_write"])
    )
    written_hash = scheduler.graph.nodes["publish"].binding.args_hash
    preview_hash = scheduler.state.steps["publish"].preview_hash

    with pytest.raises(TransitionRefused) as refused:
        scheduler.approve("publish", "carol", written_hash, preview_hash)

    assert refused.value.code == "approval_mismatch"
    assert scheduler.state.steps["publish"].status == "awaiting_approval"


def test_an_approval_given_for_one_resolved_value_is_refused_for_another(tmp_path):
    (tmp_path / "CHANGELOG.txt").write_text(NOTES)
    scheduler, executor = _run_until_publish(
        tmp_path, _notes_graph(requires_approval_before=["file_write"])
    )
    call = scheduler.call("publish")
    preview_hash = scheduler.state.steps["publish"].preview_hash
    scheduler.approve("publish", "carol", call.args_hash, preview_hash)
    token = SIGNER.issue("run-1", "publish", call.args_hash, "carol", preview_hash)
    # the same step's call with another value from read (as if read had said otherwise)
    other = concrete_call(
        scheduler.graph.nodes["publish"].binding, {"read": {"path": "x", "content": "rm -rf\n"}}
    )
    [step_id] = scheduler.get_ready()

    result = executor.execute(
        other,
        step_context("run-1", scheduler.graph.nodes[step_id], tmp_path, 1),
        token=token,
        plan_approval_scopes=("file_write",),
    )

    assert (result.status, result.error_code) == ("failed", "approval_mismatch")
    assert not (tmp_path / "NOTES.md").exists()
    # and the call the approval was for runs
    assert _dispatch_with(scheduler, executor, tmp_path, token).succeeded
    assert (tmp_path / "NOTES.md").read_text() == "# 2.4\n\n" + NOTES


def _dispatch_with(scheduler, executor, workspace, token):
    node = scheduler.graph.nodes["publish"]
    return StepDispatcher(executor).dispatch(
        node,
        step_context("run-1", node, workspace, 1),
        call=scheduler.call("publish"),
        token=token,
        approval_scopes=("file_write",),
        inputs={},
        grant=None,
    )


def test_a_call_that_cannot_be_resolved_fails_the_step_before_anyone_is_asked(tmp_path):
    # facts echoes a value known only at run time, so the compiler cannot tell its type
    graph = compile_graph(
        plan(
            {"id": "seed", "tool": "echo", "args": {"n": 3}},
            {"id": "facts", "tool": "echo", "depends_on": ["seed"],
             "args": {"n": {"$from": "seed", "path": "n"}}},
            {"id": "publish", "tool": "file_write", "depends_on": ["facts"],
             "args": {"path": "NOTES.md", "content": {"$from": "facts", "path": "n"}}},
            requires_approval_before=["file_write"],
        ),
        POLICY,
    )  # fmt: skip
    executor = _executor()
    scheduler = Scheduler(
        graph, "run-1", gate=GATE, previewer=step_previewer(executor, "run-1", lambda: tmp_path)
    )
    scheduler.prepare(approved(graph))
    scheduler.done(*scheduler.get_ready(), ToolResult("succeeded", output={"n": 3}))
    [step_id] = scheduler.get_ready()
    assert scheduler.call(step_id).args == {"n": 3}

    scheduler.done(step_id, ToolResult("succeeded", output={"n": 3}))

    publish = scheduler.state.steps["publish"]
    assert (publish.status, publish.error) == (
        "failed",
        "arguments of 'file_write': data.content must be string (with the values from "
        "facts.n) [invalid_args]",
    )
    assert [e.event_type for e in scheduler.events[-2:]] == ["step_failed", "run_needs_replan"]
    assert scheduler.state.status == "needs_replan"
    assert executor.calls == 0


def test_a_scheduler_rebuilt_from_the_events_resolves_the_same_call(tmp_path):
    (tmp_path / "CHANGELOG.txt").write_text(NOTES)
    graph = _notes_graph(requires_approval_before=["file_write"])
    scheduler, _ = _run_until_publish(tmp_path, graph)

    again = Scheduler(graph, "run-1", gate=GATE, state=rebuild("run-1", scheduler.events))

    assert again.call("publish") == scheduler.call("publish")
    assert again.approval_hash("publish") == _waiting_event(scheduler).tool_args_hash


def test_a_local_run_approves_and_runs_the_resolved_call(tmp_path):
    (tmp_path / "CHANGELOG.txt").write_text(NOTES)
    graph = _notes_graph(requires_approval_before=["file_write"])
    notices = []
    run = LocalRun(
        GraphCompiler(builtin_registry(), PolicyEngine(POLICY)),
        _executor(),
        tmp_path,
        approver="carol",
        on_approval=notices.append,
    )

    result = run.run(graph.document)

    assert result.status == "succeeded", result.stop_reason
    assert (tmp_path / "NOTES.md").read_text() == "# 2.4\n\n" + NOTES
    [step_notice] = [n for n in notices if n.kind == "step"]
    assert "+fix: parser handles empty plans" in step_notice.details


def test_after_a_replan_a_reset_step_takes_its_value_from_a_preserved_step(tmp_path):
    (tmp_path / "CHANGELOG.txt").write_text(NOTES)
    strict = {"checks": ["contains(diff, 'nothing')"]}  # fails: the contract is wrong
    first = compile_graph(
        plan(
            {"id": "read", "tool": "file_read", "args": {"path": "CHANGELOG.txt"}},
            {"id": "publish", "tool": "file_write", "depends_on": ["read"],
             "args": {"path": "NOTES.md", "content": CONTENT}, "done_when": strict},
        ),
        POLICY,
    )  # fmt: skip
    scheduler, executor = _run_until_publish(tmp_path, first)
    _run(scheduler, executor, tmp_path, "publish")
    assert scheduler.state.status == "needs_replan"
    (tmp_path / "CHANGELOG.txt").write_text("changed after read ran\n")
    fixed = _notes_graph()  # the same read and the same arguments, a contract that holds

    events = scheduler.resume(fixed, 2, "editor", approved(fixed, 2))

    assert events[0].facts["preserved"] == ["read"]
    assert events[0].facts["reset"] == ["publish"]
    _run(scheduler, executor, tmp_path, "publish")
    # read did not run again: publish took what it had read before the replan
    assert (tmp_path / "NOTES.md").read_text() == "# 2.4\n\n" + NOTES
    assert scheduler.state.status == "succeeded"


def test_a_replan_that_keeps_a_step_with_references_preserves_it(tmp_path):
    (tmp_path / "CHANGELOG.txt").write_text(NOTES)
    steps = [
        {"id": "read", "tool": "file_read", "args": {"path": "CHANGELOG.txt"}},
        {"id": "publish", "tool": "file_write", "depends_on": ["read"],
         "args": {"path": "NOTES.md", "content": CONTENT}},
        {"id": "check", "tool": "fail", "depends_on": ["publish"],
         "args": {"message": "not yet"}},
    ]  # fmt: skip
    first = compile_graph(plan(*steps), POLICY)
    scheduler, executor = _run_until_publish(tmp_path, first)
    _run(scheduler, executor, tmp_path, "publish")
    _run(scheduler, executor, tmp_path, "check")
    assert scheduler.state.status == "needs_replan"
    fixed = compile_graph(plan(*steps[:2], {**steps[2], "tool": "noop", "args": {}}), POLICY)

    events = scheduler.resume(fixed, 2, "editor", approved(fixed, 2))

    assert events[0].facts["preserved"] == ["read", "publish"]
    assert events[0].facts["reset"] == ["check"]
