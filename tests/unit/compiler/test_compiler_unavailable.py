"""A tool of an MCP server that is down: the compiler says ``tool_unavailable`` naming the
server (never ``unknown_tool``), an agent's call of it is refused the same way, and the
executor refuses a binding whose tool's server went down, or whose tool changed."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from forge.compiler import CallRefused, GraphCompiler, bind_call
from forge.plan import from_data
from forge.runners.base import RunContext, RunnerOutcome
from forge.runtime import InMemoryRecordStore, ToolExecutor
from forge.tools import Policy, PolicyEngine, ToolRegistry, ToolSpec

REASON = "MCP server 'mail' did not start (ConnectionRefusedError: [Errno 111])"
SEND = ToolSpec("mail.send", "Send a mail", {"type": "object"}, "mcp.mail", "write")
POLICY = PolicyEngine(Policy.allowing(["mcp.mail", "compute"]))


def document(**step):
    return from_data(
        {"goal": "Tell the supplier", "steps": [{"id": "tell", "description": "Mail them", **step}]}
    )


def compile_with(registry, **step):
    return GraphCompiler(registry, POLICY).compile(document(**step))


DOWN = ToolRegistry(unavailable={"mail": REASON})


def test_a_step_using_a_tool_of_a_server_that_is_down_is_tool_unavailable():
    result = compile_with(DOWN, tool="mail.send", args={}, done_when={"required_keys": ["id"]})

    assert [d.to_data() for d in result.diagnostics] == [
        {
            "code": "tool_unavailable",
            "severity": "error",
            "message": "step 'tell' uses tool 'mail.send' of MCP server 'mail', which is not "
            f"available: {REASON}",
            "nodes": ["tell"],
            "edges": [],
        }
    ]
    assert result.graph is None


def test_an_agent_step_allowing_such_a_tool_hears_the_same():
    result = compile_with(DOWN, tools_allowed=["mail.send"], done_when={"required_keys": ["x"]})

    assert [d.code for d in result.errors] == ["tool_unavailable"]
    assert "tell' allows tool 'mail.send' of MCP server 'mail'" in result.errors[0].message


def test_a_tool_no_server_offers_is_still_unknown():
    result = compile_with(DOWN, tool="ledger.send", args={})

    assert [d.code for d in result.errors] == ["unknown_tool"]


def test_an_agent_s_call_of_such_a_tool_is_refused_as_unavailable():
    step = document(tools_allowed=["mail.send"]).steps[0]

    with pytest.raises(CallRefused) as caught:
        bind_call(DOWN, POLICY, "mail.send", {}, step)

    assert caught.value.code == "tool_unavailable"
    assert caught.value.message == f"tool 'mail.send' is not available: {REASON}"


class Counting:
    def __init__(self) -> None:
        self.calls = 0

    def run(self, tool, args, context):
        self.calls += 1
        return RunnerOutcome.success({})


@pytest.fixture
def bound():
    return compile_with(ToolRegistry([SEND]), tool="mail.send", args={}).graph.nodes["tell"].binding


def context(tmp_path: Path) -> RunContext:
    return RunContext("run-1", "tell", tmp_path, timeout_s=5)


def test_a_binding_whose_server_went_down_is_refused_before_any_runner(bound, tmp_path):
    runner, records = Counting(), InMemoryRecordStore()
    executor = ToolExecutor(DOWN, POLICY, records, {"mail.send": runner})

    result = executor.execute(bound, context(tmp_path))

    assert (result.status, result.error_code) == ("failed", "tool_unavailable")
    assert runner.calls == 0
    assert [record.status for record in records.records] == ["refused"]


def test_a_binding_whose_tool_changed_since_the_compile_is_refused(bound, tmp_path):
    runner = Counting()
    now_destructive = dataclasses.replace(SEND, side_effect="delete", risk="high")
    executor = ToolExecutor(
        ToolRegistry([now_destructive]), POLICY, InMemoryRecordStore(), {"mail.send": runner}
    )

    result = executor.execute(bound, context(tmp_path))

    assert result.error_code == "stale_binding"
    assert result.error == "tool 'mail.send' changed since the plan was compiled"
    assert runner.calls == 0
