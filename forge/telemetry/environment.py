"""What the environment says about tracing, read without OpenTelemetry: whether it is on
(``tracing_wanted``), whether spans may hold content (``trace_content``) and where spans
go (``traces_endpoint``). A host asks ``tracing_wanted`` before it imports
``forge.telemetry.setup``, which loads the SDK, so a process that does not trace never
loads it.

Tracing is on when ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or its traces-only form
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) is set and ``OTEL_SDK_DISABLED`` is not true.
"""

from __future__ import annotations

from collections.abc import Mapping

from forge.errors import ForgeError

__all__ = ["TraceContentInvalid", "trace_content", "traces_endpoint", "tracing_wanted"]

_ENDPOINTS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")


class TraceContentInvalid(ForgeError, ValueError):
    code = "invalid_trace_content"


def tracing_wanted(environ: Mapping[str, str]) -> bool:
    """Whether ``environ`` asks for traces (see the module's docstring)."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return any(environ.get(name, "").strip() for name in _ENDPOINTS)


def trace_content(environ: Mapping[str, str]) -> bool:
    """``FORGE_TRACE_CONTENT``: ``1`` or ``0`` (unset is ``0``); anything else is refused."""
    value = environ.get("FORGE_TRACE_CONTENT", "").strip()
    if value not in ("", "0", "1"):
        raise TraceContentInvalid(f"FORGE_TRACE_CONTENT must be 1 or 0, not {value!r}")
    return value == "1"


def traces_endpoint(environ: Mapping[str, str]) -> str:
    """Where spans go: ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` as it is, else
    ``OTEL_EXPORTER_OTLP_ENDPOINT`` + ``/v1/traces`` (the SDK's rule, applied to
    ``environ`` here, since the exporter itself reads only the process's environment)."""
    traces = environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    if traces:
        return traces
    return environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip().rstrip("/") + "/v1/traces"
