"""An agent step's spans (issue 30): ``invoke_agent <step>`` over its model turns
(``chat <model>`` with the tokens of each turn) and its tool calls (``execute_tool``),
from the core's hooks with OpenTelemetry's in-memory exporter."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from forge.agents import AgentRunner
from forge.models import ModelReply, ScriptedModel, ToolCall
from forge.runtime.agent_port import AgentGrant
from forge.runtime.dispatch import StepDispatcher, step_context
from forge.telemetry.otel import OtelTracing
from forge.telemetry.switch import RunTrace, StepTrace, current, install, uninstall

from ..agents.conftest import agent_plan

READ_NOTES = {"id": "summarise", "tools_allowed": ["file_read"]}


@pytest.fixture
def exported() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    install(OtelTracing(provider))
    yield exporter
    uninstall()
    provider.shutdown()


def test_an_agent_step_is_invoke_agent_over_its_chat_turns_and_tool_calls(harness, exported):

    (harness.workspace / "notes.md").write_text("ACME pays late\n")
    model = ScriptedModel(
        [
            ModelReply(
                "", (ToolCall("c1", "file_read", {"path": "notes.md"}),), tokens=30,
                model="gpt-test", input_tokens=20, output_tokens=10,
            ),
            ModelReply(
                json.dumps({"facts": ["late"]}), tokens=12, model="gpt-test",
                input_tokens=9, output_tokens=3,
            ),
        ],
        name="openai:gpt-test",
    )  # fmt: skip
    graph = harness.graph(agent_plan(READ_NOTES))
    node = graph.nodes["summarise"]
    tracing = current()
    assert tracing is not None
    traceparent = tracing.run_started(RunTrace("7", "3", "Risk", 2), ("bob",))
    dispatcher = StepDispatcher(harness.executor, AgentRunner(model, harness.executor))

    result = dispatcher.dispatch(
        node,
        step_context("7", node, harness.workspace, 1),
        token=None,
        approval_scopes=(),
        inputs={},
        grant=AgentGrant(),
        trace=StepTrace(traceparent, "7", "3", 2, approved_by="carol"),
    )

    assert result.status == "succeeded"
    spans = {span.name: span for span in exported.get_finished_spans()}
    assert sorted(spans) == [
        "chat openai:gpt-test",
        "execute_tool file_read",
        "invoke_agent Risk",
        "invoke_agent summarise",
    ]
    step = spans["invoke_agent summarise"]
    assert step.parent.span_id == spans["invoke_agent Risk"].context.span_id
    assert dict(step.attributes) == {
        "forge.run.id": "7",
        "forge.plan.id": "3",
        "forge.plan.version": 2,
        "forge.step.id": "summarise",
        "forge.step.attempt": 1,
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "summarise",
        "forge.step.result": "succeeded",
        "forge.usage.tokens": 42,
    }
    assert [(e.name, dict(e.attributes)) for e in step.events] == [
        ("forge.approval", {"forge.approval.approver": "carol"})
    ]
    chats = [s for s in exported.get_finished_spans() if s.name.startswith("chat ")]
    assert [dict(s.attributes) for s in chats] == [
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "openai:gpt-test",
            "forge.run.id": "7",
            "forge.plan.id": "3",
            "forge.plan.version": 2,
            "forge.step.id": "summarise",
            "gen_ai.response.model": "gpt-test",
            "gen_ai.usage.input_tokens": input_tokens,
            "gen_ai.usage.output_tokens": output_tokens,
        }
        for input_tokens, output_tokens in ((20, 10), (9, 3))
    ]
    assert all(s.parent.span_id == step.context.span_id for s in chats)
    tool = spans["execute_tool file_read"]
    assert tool.parent.span_id == step.context.span_id
    assert tool.attributes["gen_ai.tool.name"] == "file_read"
    assert "gen_ai.tool.call.arguments" not in tool.attributes


def test_without_tracing_installed_no_span_is_made(harness, exported):
    uninstall()
    graph = harness.graph(agent_plan({"id": "say", "tool": "echo", "args": {"x": 1}}))
    node = graph.nodes["say"]

    result = StepDispatcher(harness.executor).dispatch(
        node,
        step_context("7", node, harness.workspace, 1),
        token=None,
        approval_scopes=(),
        inputs={},
        grant=None,
        call=node.binding,
        trace=StepTrace("", "7", "3", 1),
    )

    assert result.status == "succeeded"
    assert exported.get_finished_spans() == ()
