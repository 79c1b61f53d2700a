"""One step dispatcher for the CLI and the workers: a tool step goes to the executor, an
agent step to the agent (or fails with no_model), each in its own context."""

from __future__ import annotations

from forge.runtime import ToolResult
from forge.runtime.dispatch import AGENT_TIMEOUT_S, StepDispatcher, step_context

from .conftest import compile_graph, plan


def _graph():
    return compile_graph(
        plan(
            {"id": "note", "tool": "echo", "args": {"text": "hi"}, "timeout_s": 7},
            {"id": "think", "tools_allowed": ["echo"], "depends_on": ["note"]},
        )
    )


class FakeAgent:
    def __init__(self):
        self.seen = []

    def run_step(self, node, context, inputs, grant=None):
        self.seen.append((node.id, context.timeout_s, dict(inputs), grant))
        return ToolResult("succeeded", output={"answer": "done"})


def test_a_tool_step_runs_through_the_executor_under_its_own_timeout(executor, tmp_path):
    node = _graph().nodes["note"]
    context = step_context("run-1", node, tmp_path, attempt=1)

    result = StepDispatcher(executor).dispatch(
        node, context, token=None, approval_scopes=(), inputs={}, grant=None
    )

    assert (context.timeout_s, context.step_id, context.workspace) == (7, "note", tmp_path)
    assert (result.status, result.output) == ("succeeded", {"text": "hi"})
    assert executor.calls == 1


def test_an_agent_step_without_a_model_fails_with_no_model_and_says_how_to_set_one(
    executor, tmp_path
):
    node = _graph().nodes["think"]

    result = StepDispatcher(executor, None, "set FORGE_MODEL").dispatch(
        node, step_context("run-1", node, tmp_path, 1), token=None, approval_scopes=(),
        inputs={}, grant=None,
    )  # fmt: skip

    assert (result.status, result.error_code) == ("failed", "no_model")
    assert result.error == (
        "step 'think' is an agent step and no model is configured (set FORGE_MODEL)"
    )
    assert executor.calls == 0


def test_an_agent_step_goes_to_the_agent_with_its_inputs(executor, tmp_path):
    node = _graph().nodes["think"]
    agent = FakeAgent()

    result = StepDispatcher(executor, agent).dispatch(
        node, step_context("run-1", node, tmp_path, 1), token=None, approval_scopes=(),
        inputs={"note": {"text": "hi"}}, grant=None,
    )  # fmt: skip

    assert result.output == {"answer": "done"}
    assert agent.seen == [("think", AGENT_TIMEOUT_S, {"note": {"text": "hi"}}, None)]
