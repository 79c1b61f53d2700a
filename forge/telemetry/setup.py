"""``tracing_from_env``: the OpenTelemetry tracing the environment asks for, if any
(when, ``forge.telemetry.environment`` says).

The endpoints and ``FORGE_TRACE_CONTENT`` are read from the mapping given; everything
else is the SDK's own variables, read by the SDK from the process's environment:
headers, timeouts, the sampler (``OTEL_TRACES_SAMPLER``), batching (``OTEL_BSP_*``),
``OTEL_SERVICE_NAME`` (``forge`` when unset) and ``OTEL_RESOURCE_ATTRIBUTES``.
``FORGE_TRACE_CONTENT=1`` puts redacted arguments and outputs into spans.
"""

from __future__ import annotations

from collections.abc import Mapping

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from forge.telemetry.environment import trace_content, traces_endpoint, tracing_wanted
from forge.telemetry.otel import OtelTracing

__all__ = ["tracing_from_env"]


def tracing_from_env(environ: Mapping[str, str]) -> OtelTracing | None:
    """An ``OtelTracing`` exporting over OTLP/HTTP in batches, or ``None`` when tracing
    is off."""
    if not tracing_wanted(environ):
        return None
    content = trace_content(environ)
    attributes = {} if environ.get("OTEL_SERVICE_NAME") else {"service.name": "forge"}
    provider = TracerProvider(resource=Resource.create(attributes))
    exporter = OTLPSpanExporter(endpoint=traces_endpoint(environ))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return OtelTracing(provider, content=content)
