"""The ToolExecutor: the only entry for side effects, and what it refuses before one."""

from dataclasses import replace
from pathlib import Path

import msgspec
import pytest

from forge.compiler import GraphCompiler
from forge.planners import Observation, ScriptedPlanner
from forge.runners.base import RunContext
from forge.runtime import ToolExecutor
from forge.runtime.local import LocalRun
from forge.tools import DEFAULT_POLICY, Policy, PolicyEngine, builtin_registry

from .conftest import SIGNER, compile_graph, plan


def _context(tmp_path: Path, step_id="s", run_id="run-1") -> RunContext:
    return RunContext(run_id=run_id, step_id=step_id, workspace=tmp_path, timeout_s=5)


@pytest.mark.parametrize(
    ("steps", "code"),
    [
        (
            [
                {"id": "a", "tool": "noop", "depends_on": ["c"]},
                {"id": "b", "tool": "noop", "depends_on": ["a"]},
                {"id": "c", "tool": "noop", "depends_on": ["b"]},
            ],
            "cycle",
        ),
        ([{"id": "a", "tool": "teleport", "args": {"to": "mars"}}], "unknown_tool"),
        ([{"id": "a", "tool": "shell", "args": {"argv": ["rm", "-rf", "/"]}}], "unauthorized_tool"),
    ],
    ids=["cycle", "unknown tool", "unauthorized tool"],
)
def test_a_plan_that_fails_to_compile_never_reaches_the_tool_executor(
    steps, code, executor, tmp_path
):
    compiler = GraphCompiler(builtin_registry(), PolicyEngine(Policy.allowing(["compute"])))
    planner_output = ScriptedPlanner([plan(*steps)]).plan("task", Observation()).document

    result = LocalRun(compiler, executor, tmp_path, approver="carol").run(planner_output)

    assert result.status == "not_compiled"
    assert code in [diagnostic.code for diagnostic in result.diagnostics]
    assert executor.calls == 0


def test_it_runs_a_bound_call_and_keeps_an_execution_record(executor, records, tmp_path):
    graph = compile_graph(plan({"id": "s", "tool": "echo", "args": {"facts": [1, 2]}}))
    binding = graph.nodes["s"].binding

    result = executor.execute(binding, _context(tmp_path))

    assert (result.status, result.output, result.error) == ("succeeded", {"facts": [1, 2]}, "")
    [record] = records.records
    assert (record.run_id, record.step_id, record.tool, record.status) == (
        "run-1",
        "s",
        "echo",
        "succeeded",
    )
    assert record.args_hash == binding.args_hash
    assert record.id == result.record_id


def test_it_accepts_only_tool_bindings(executor, tmp_path):
    with pytest.raises(TypeError, match="ToolBindings"):
        executor.execute(lambda: "planner's function", _context(tmp_path))
    assert executor.calls == 0


def test_arguments_are_validated_again_before_the_runner(executor, records, tmp_path):
    binding = (
        compile_graph(plan({"id": "s", "tool": "sleep", "args": {"seconds": 0}})).nodes["s"].binding
    )
    tampered = msgspec.structs.replace(binding, args={"seconds": "forever"})

    result = executor.execute(tampered, _context(tmp_path))

    assert (result.status, result.error_code) == ("failed", "invalid_args")
    assert records.records[0].status == "refused"


def test_the_policy_is_checked_at_execution_as_well_as_at_compile(records, tmp_path):
    binding = compile_graph(plan({"id": "s", "tool": "noop"})).nodes["s"].binding
    strict = ToolExecutor(builtin_registry(), PolicyEngine(Policy()), records, {})

    result = strict.execute(binding, _context(tmp_path))

    assert (result.status, result.error_code) == ("failed", "unauthorized_tool")


def _approval_binding():
    graph = compile_graph(
        plan(
            {"id": "s", "tool": "file_write", "args": {"path": "out.txt", "content": "hi"}},
            requires_approval_before=["file_write"],
        )
    )
    return graph.nodes["s"].binding


def test_a_call_that_needs_approval_is_refused_without_a_token(executor, tmp_path):
    result = executor.execute(_approval_binding(), _context(tmp_path))

    assert (result.status, result.error_code) == ("failed", "approval_required")


def test_an_approval_token_binds_run_step_and_the_exact_arguments(executor, tmp_path):
    binding = _approval_binding()
    token = SIGNER.issue("run-1", "s", binding.args_hash, "alice")
    other_args = msgspec.structs.replace(
        binding, args={"path": "out.txt", "content": "bye"}, args_hash="f" * 64
    )

    assert executor.execute(other_args, _context(tmp_path), token=token).error_code == (
        "approval_mismatch"
    )
    assert executor.execute(
        binding, _context(tmp_path, run_id="run-2"), token=token
    ).error_code == ("approval_mismatch")
    forged = replace(token, approver="mallory")
    assert executor.execute(binding, _context(tmp_path), token=forged).error_code == (
        "approval_invalid"
    )


def test_a_tool_without_a_runner_fails_cleanly(records, tmp_path):
    binding = compile_graph(plan({"id": "s", "tool": "noop"})).nodes["s"].binding
    bare = ToolExecutor(builtin_registry(), PolicyEngine(DEFAULT_POLICY), records, {})

    result = bare.execute(binding, _context(tmp_path))

    assert (result.status, result.error_code) == ("failed", "no_runner")


def test_a_runner_that_crashes_fails_the_step_not_the_caller(records, tmp_path):
    class Broken:
        def run(self, tool, args, context):
            raise ZeroDivisionError("bug")

    binding = compile_graph(plan({"id": "s", "tool": "noop"})).nodes["s"].binding
    executor = ToolExecutor(
        builtin_registry(), PolicyEngine(DEFAULT_POLICY), records, {"noop": Broken()}
    )

    result = executor.execute(binding, _context(tmp_path))

    assert (result.status, result.error_code) == ("failed", "runner_crashed")
    assert result.error == "ZeroDivisionError: bug"


def test_a_runner_that_does_not_honour_its_timeout_is_abandoned(records, tmp_path, monkeypatch):
    import threading

    release = threading.Event()

    class Stuck:
        enforces_timeout = False

        def run(self, tool, args, context):
            release.wait(30)

    monkeypatch.setattr("forge.runtime.executor._GRACE_S", 0.2)
    binding = msgspec.structs.replace(
        compile_graph(plan({"id": "s", "tool": "noop"})).nodes["s"].binding, timeout_s=0.1
    )
    executor = ToolExecutor(
        builtin_registry(), PolicyEngine(DEFAULT_POLICY), records, {"noop": Stuck()}
    )

    result = executor.execute(binding, _context(tmp_path))
    release.set()

    assert (result.status, result.error_code) == ("failed", "timeout")
