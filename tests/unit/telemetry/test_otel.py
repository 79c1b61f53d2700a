"""``OtelTracing`` on its own: what a span records when its block raises, and what a
tool call outside any step names."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from forge.telemetry.otel import OtelTracing, redacted_json
from forge.telemetry.switch import RunTrace, StepTrace


def _tracing() -> tuple[OtelTracing, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return OtelTracing(provider), exporter


def test_a_step_whose_work_raises_ends_its_span_with_the_error_and_lets_it_through():
    tracing, exporter = _tracing()
    parent = tracing.run_started(RunTrace("1", "2", "Risk", 1), ())

    with pytest.raises(RuntimeError, match="the worker broke"):
        with tracing.step(StepTrace(parent, "1", "2", 1), "fetch", attempt=1, agent=False):
            raise RuntimeError("the worker broke")

    step = next(s for s in exporter.get_finished_spans() if s.name == "step fetch")
    assert step.status.status_code is StatusCode.ERROR
    assert step.status.description == "RuntimeError: the worker broke"
    assert [event.name for event in step.events] == ["exception"]
    # The step is no longer open: a later tool call names no plan.
    with tracing.tool_call("echo", "1", "", {}) as span:
        span.ended("succeeded", output=None, error_code="", call_id="")
    tool = next(s for s in exporter.get_finished_spans() if s.name == "execute_tool echo")
    assert tool.parent is None
    assert "forge.plan.id" not in tool.attributes


def test_a_failed_call_has_the_error_status_and_its_code():
    tracing, exporter = _tracing()

    with tracing.tool_call("http_request", "1", "post", {"url": "https://x"}) as span:
        span.ended("failed", output=None, error_code="host_not_allowed", call_id="r1")

    (tool,) = exporter.get_finished_spans()
    assert tool.status.status_code is StatusCode.ERROR
    assert tool.attributes["forge.error.code"] == "host_not_allowed"
    assert tool.attributes["error.type"] == "host_not_allowed"
    assert "gen_ai.tool.call.arguments" not in tool.attributes


def test_content_is_the_audit_trails_redaction_as_compact_sorted_json():
    assert redacted_json({"b": 1, "api_key": "k", "note": "Bearer abcdef123"}) == (
        '{"api_key":"[redacted]","b":1,"note":"[redacted]"}'
    )
