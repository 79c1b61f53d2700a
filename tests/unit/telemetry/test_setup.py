"""When the environment turns tracing on (``forge.telemetry.setup``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from forge.telemetry.environment import TraceContentInvalid, traces_endpoint
from forge.telemetry.otel import OtelTracing
from forge.telemetry.setup import tracing_from_env
from forge.telemetry.switch import RunTrace
from tests.fixtures.otlp_receiver import OtlpReceiver


def test_tracing_is_off_without_an_otlp_endpoint():
    assert tracing_from_env({}) is None
    assert tracing_from_env({"FORGE_TRACE_CONTENT": "1"}) is None


def test_the_sdk_switch_turns_tracing_off_even_with_an_endpoint():
    environ = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"}
    assert tracing_from_env(environ) is None


@pytest.mark.parametrize(
    "name", ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]
)
def test_an_endpoint_turns_tracing_on_without_content_unless_asked(name):
    tracing = tracing_from_env({name: "http://127.0.0.1:4318"})
    assert isinstance(tracing, OtelTracing) and tracing.content is False
    tracing.provider.shutdown()

    asked = tracing_from_env({name: "http://127.0.0.1:4318", "FORGE_TRACE_CONTENT": "1"})
    assert isinstance(asked, OtelTracing) and asked.content is True
    asked.provider.shutdown()


def test_a_trace_content_setting_other_than_0_or_1_is_refused_by_name():
    with pytest.raises(TraceContentInvalid, match="FORGE_TRACE_CONTENT must be 1 or 0, not 'yes'"):
        tracing_from_env(
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x:4318", "FORGE_TRACE_CONTENT": "yes"}
        )


def test_the_traces_endpoint_is_the_base_endpoint_and_v1_traces_unless_named_itself():
    assert traces_endpoint({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/"}) == (
        "http://c:4318/v1/traces"
    )
    both = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://t.example/otlp/spans",
    }
    assert traces_endpoint(both) == "https://t.example/otlp/spans"


def test_spans_go_to_the_endpoint_of_the_environment_given(monkeypatch):
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    receiver = OtlpReceiver().start()
    try:
        tracing = tracing_from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint})
        assert tracing is not None
        tracing.run_started(RunTrace("1", "2", "Risk", 1), ("grace",))
        tracing.flush()
        assert [span.name for span in receiver.received()] == ["invoke_agent Risk"]
        tracing.provider.shutdown()
    finally:
        receiver.stop()


def test_a_process_that_does_not_trace_never_loads_opentelemetry():
    """The web and worker processes start (Django set up, every app ready, a step's
    dispatcher and executor imported) without importing any of OpenTelemetry."""
    code = (
        "import os, sys, django\n"
        "os.environ['DJANGO_SETTINGS_MODULE'] = 'forge_web.settings'\n"
        "django.setup()\n"
        "import runs.worker, runs.prometheus, forge.agents\n"
        "print(sorted(n for n in sys.modules if n.startswith('opentelemetry')))\n"
    )
    environ = {
        k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "DJANGO", "PYTEST"))
    }
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=environ, check=True,
        cwd=Path(__file__).resolve().parents[3],
    )  # fmt: skip

    assert result.stdout.strip() == "[]"
