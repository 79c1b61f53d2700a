"""Telemetry of runs: OpenTelemetry spans under the GenAI semantic conventions.

The core's three hooks (a step in ``forge.runtime.dispatch``, a tool call in
``forge.runtime.executor``, a model turn in ``forge.agents.runner``) ask
``forge.telemetry.switch.current()`` for the installed ``Tracing`` and do nothing more
when there is none: with tracing off nothing of OpenTelemetry is imported or called.
``forge.telemetry.environment`` says whether the environment asks for tracing
(``OTEL_EXPORTER_OTLP_ENDPOINT``) without importing the SDK; only then does the host (the
web and worker processes, a benchmark) import ``forge.telemetry.setup``, whose
``tracing_from_env`` builds the OpenTelemetry one (``forge.telemetry.otel``), and install it.
"""
