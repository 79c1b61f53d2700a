"""Runs as OpenTelemetry traces (issue 30, SPEC section 12), received by a real OTLP/HTTP
receiver: the tracing is the one the environment builds (``OTEL_EXPORTER_OTLP_ENDPOINT``),
the runs go through the worker path (the task queue drained by django-tasks-db's worker),
and the spans are read back from the protobuf the exporter sent."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from forge.telemetry.setup import tracing_from_env
from forge.telemetry.switch import install, uninstall
from plans import services as plan_services
from runs.models import Run
from runs.services import approve_step, rerun_run, resume_run, start_run
from tests.fixtures.otlp_receiver import OtlpReceiver, ReceivedSpan

from .runs_helpers import FAILING_STEPS, FIXED_STEPS, approved_version, drain, new_version

pytestmark = pytest.mark.django_db(transaction=True)

STEPS = [
    {"id": "fetch", "description": "Load the orders", "tool": "echo", "args": {"orders": 48}},
    {
        "id": "notify",
        "description": "Tell the supplier",
        "tool": "echo",
        "args": {"to": "ops", "password": "hunter2", "note": "sent with token=s3cr3tvalue"},
        "depends_on": ["fetch"],
    },
]


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    started = OtlpReceiver().start()
    yield started
    started.stop()


@pytest.fixture
def traced(receiver: OtlpReceiver, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Tracing on, as a process whose environment names the receiver gets it; calling
    the fixture's value flushes and returns every span received so far."""

    def start(content: bool = False) -> Any:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
        monkeypatch.setenv("FORGE_TRACE_CONTENT", "1" if content else "0")
        monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
        tracing = tracing_from_env(os.environ)
        assert tracing is not None
        install(tracing)
        made.append(tracing)

        def spans() -> list[ReceivedSpan]:
            tracing.flush()
            return receiver.received()

        return spans

    made: list[Any] = []
    yield start
    uninstall()
    for tracing in made:
        tracing.provider.shutdown()


def _by_name(spans: list[ReceivedSpan]) -> dict[str, list[ReceivedSpan]]:
    named: dict[str, list[ReceivedSpan]] = {}
    for span in spans:
        named.setdefault(span.name, []).append(span)
    return named


def test_a_run_on_the_worker_path_is_one_trace_of_its_steps_and_tool_calls(
    author, approver, operator, traced
):
    spans_received = traced()
    version = approved_version(author, approver, STEPS)
    run = start_run(version, operator)
    drain()

    assert Run.objects.get(pk=run.pk).status == "succeeded"
    spans = spans_received()
    assert {span.trace_id for span in spans} == {spans[0].trace_id}
    assert sorted(span.name for span in spans) == [
        "execute_tool echo",
        "execute_tool echo",
        "invoke_agent Supplier risk",
        "step fetch",
        "step notify",
    ]
    named = _by_name(spans)
    (root,) = named["invoke_agent Supplier risk"]
    assert root.parent_id == ""
    assert root.service == "forge"
    assert root.attributes == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "Supplier risk",
        "forge.run.id": str(run.pk),
        "forge.plan.id": str(version.plan_id),
        "forge.plan.name": "Supplier risk",
        "forge.plan.version": 1,
    }
    assert root.events == (("forge.approval", {"forge.approval.approver": approver.username}),)
    # W3C trace context: version, trace id, parent span id, flags (sampled, random id).
    stored = Run.objects.get(pk=run.pk).trace_context
    assert stored.startswith(f"00-{root.trace_id}-{root.span_id}-")
    for step_id in ("fetch", "notify"):
        (step,) = named[f"step {step_id}"]
        assert step.parent_id == root.span_id
        assert step.attributes == {
            "forge.run.id": str(run.pk),
            "forge.plan.id": str(version.plan_id),
            "forge.plan.version": 1,
            "forge.step.id": step_id,
            "forge.step.attempt": 1,
            "forge.step.result": "succeeded",
        }
        (tool,) = [s for s in named["execute_tool echo"] if s.parent_id == step.span_id]
        assert {k: v for k, v in tool.attributes.items() if k != "gen_ai.tool.call.id"} == {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "echo",
            "gen_ai.tool.type": "function",
            "forge.run.id": str(run.pk),
            "forge.step.id": step_id,
            "forge.plan.id": str(version.plan_id),
            "forge.plan.version": 1,
        }
        assert len(tool.attributes["gen_ai.tool.call.id"]) == 32  # the execution record's id
    # No arguments, outputs or results without FORGE_TRACE_CONTENT=1.
    content = {"gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "forge.step.output"}
    assert not any(content & set(span.attributes) for span in spans)
    assert "hunter2" not in repr(spans)


def test_each_run_is_a_trace_of_its_own(author, approver, operator, traced):
    spans_received = traced()
    version = approved_version(author, approver, STEPS)
    first, second = start_run(version, operator), start_run(version, operator)
    drain()

    traces: dict[str, set[str]] = {}
    for span in spans_received():
        traces.setdefault(span.attributes["forge.run.id"], set()).add(span.trace_id)
    assert sorted(traces) == sorted([str(first.pk), str(second.pk)])
    assert all(len(ids) == 1 for ids in traces.values())
    assert traces[str(first.pk)] != traces[str(second.pk)]


def test_content_goes_into_spans_only_when_asked_and_redacted_as_in_the_audit_trail(
    author, approver, operator, traced
):
    spans_received = traced(content=True)
    version = approved_version(author, approver, STEPS)
    start_run(version, operator)
    drain()

    named = _by_name(spans_received())
    (notify,) = [s for s in named["execute_tool echo"] if s.attributes["forge.step.id"] == "notify"]
    expected = '{"note":"sent with token=[redacted]","password":"[redacted]","to":"ops"}'
    assert notify.attributes["gen_ai.tool.call.arguments"] == expected
    assert "hunter2" not in repr(named)
    assert "s3cr3tvalue" not in repr(named)
    assert "gen_ai.tool.call.result" in notify.attributes
    (step,) = named["step notify"]
    assert "forge.step.output" in step.attributes


def test_a_replan_is_a_span_of_the_new_version_linked_to_the_one_it_replaced(
    author, approver, operator, traced
):
    spans_received = traced()
    version = approved_version(author, approver, FAILING_STEPS)
    run = start_run(version, operator)
    drain()
    assert Run.objects.get(pk=run.pk).status == "needs_replan"
    second = new_version(version, author, FIXED_STEPS)
    plan_services.approve(second, approver, "fixed")
    resume_run(run, second, operator)
    drain()

    assert Run.objects.get(pk=run.pk).status == "succeeded"
    spans = [s for s in spans_received() if s.attributes.get("forge.run.id") == str(run.pk)]
    assert {span.trace_id for span in spans} == {spans[0].trace_id}
    versions = sorted(
        (s for s in spans if s.name == "invoke_agent Supplier risk"),
        key=lambda s: s.attributes["forge.plan.version"],
    )
    assert [s.attributes["forge.plan.version"] for s in versions] == [1, 2]
    first, replan = versions
    assert replan.parent_id == first.span_id
    assert replan.links == (
        (first.trace_id, first.span_id, {"forge.link": "replan", "forge.plan.from_version": 1}),
    )
    steps_of_v2 = [s for s in spans if s.name.startswith("step ") and s.parent_id == replan.span_id]
    assert [s.attributes["forge.plan.version"] for s in steps_of_v2] == [2]
    assert steps_of_v2[0].attributes["forge.step.id"] == "score"
    # v1's score ran (its tool succeeded; its contract then failed the step) under v1.
    (invalid,) = [s for s in spans if s.name == "step score" and s.parent_id == first.span_id]
    assert invalid.attributes["forge.plan.version"] == 1


def test_a_step_approval_is_an_event_on_the_span_of_the_step_it_let_run(
    author, approver, operator, traced
):
    spans_received = traced()
    publish = {
        "id": "publish",
        "description": "Write the report",
        "tool": "file_write",
        "args": {"path": "report.md", "content": "low risk"},
    }
    version = approved_version(author, approver, [publish], requires_approval_before=["file_write"])
    run = start_run(version, operator)
    drain()
    assert Run.objects.get(pk=run.pk).status == "awaiting_approval"
    assert not [s for s in spans_received() if s.name.startswith("step ")]  # nothing ran yet

    approve_step(run, "publish", approver)
    drain()

    assert Run.objects.get(pk=run.pk).status == "succeeded"
    named = _by_name(spans_received())
    (step,) = named["step publish"]
    assert step.events == (("forge.approval", {"forge.approval.approver": approver.username}),)
    (tool,) = named["execute_tool file_write"]
    assert tool.parent_id == step.span_id


def test_a_rerun_is_a_trace_of_its_own_linked_to_the_run_it_reran(
    author, approver, operator, traced
):
    spans_received = traced()
    version = approved_version(author, approver, STEPS)
    first = start_run(version, operator)
    drain()
    again = rerun_run(first, ["notify"], operator)
    drain()

    roots = {
        s.attributes["forge.run.id"]: s
        for s in spans_received()
        if s.name == "invoke_agent Supplier risk"
    }
    old, new = roots[str(first.pk)], roots[str(again.pk)]
    assert new.trace_id != old.trace_id
    assert new.links == ((old.trace_id, old.span_id, {"forge.link": "rerun"}),)
    steps = sorted(s.name for s in spans_received() if s.trace_id == new.trace_id and s.parent_id)
    assert steps == ["execute_tool echo", "step notify"]  # fetch was kept, not run again


def test_each_process_traces_when_its_environment_names_an_endpoint(monkeypatch, receiver):
    from django.core.exceptions import ImproperlyConfigured

    from forge.telemetry.otel import OtelTracing
    from forge.telemetry.switch import current
    from runs import tracing

    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    tracing.configure()
    assert current() is None

    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
    monkeypatch.setenv("FORGE_TRACE_CONTENT", "yes")
    with pytest.raises(ImproperlyConfigured, match="FORGE_TRACE_CONTENT must be 1 or 0"):
        tracing.configure()
    assert current() is None

    monkeypatch.setenv("FORGE_TRACE_CONTENT", "1")
    tracing.configure()
    installed = current()
    try:
        assert isinstance(installed, OtelTracing) and installed.content is True
    finally:
        uninstall()
        if installed is not None:
            installed.provider.shutdown()
