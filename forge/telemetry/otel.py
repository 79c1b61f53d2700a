"""``OtelTracing``: the ``Tracing`` port on the OpenTelemetry SDK.

A run is one trace. Its version's span (``invoke_agent <plan>``) is made and ended where
the run starts or resumes (the web), and its W3C ``traceparent`` is stored on the run;
each step's span, on whichever worker runs it, takes that stored context as its parent,
and the step's tool calls and model turns nest under it in that worker's thread. A
replan's version span is the child of the one it replaced and linked to it
(``forge.link=replan``); a re-run starts a trace of its own linked to the run it re-ran.
Approvals are span events (``forge.approval``) on the span of what was approved.

Arguments, outputs and results go into spans only when ``content`` is on
(``FORGE_TRACE_CONTENT=1``), and then redacted by ``forge.redaction.redact``, the
function the audit trail redacts its payloads with, as compact JSON.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import Link, Span, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from forge.redaction import redact
from forge.telemetry import names
from forge.telemetry.switch import RunTrace, StepTrace

__all__ = ["OtelTracing"]

_PROPAGATOR = TraceContextTextMapPropagator()
_PARENTS_KEPT = 1024


class OtelTracing:
    def __init__(self, provider: TracerProvider, *, content: bool = False) -> None:
        self.provider = provider
        self.content = content
        self._tracer = provider.get_tracer("forge")
        # The step whose span is open in this thread, and its id: its tool calls and
        # model turns name its run, plan and version.
        self._step: ContextVar[tuple[StepTrace, str] | None] = ContextVar(
            "forge_step", default=None
        )
        # Parsed parents by traceparent: a run's steps share one, and parsing it was a
        # seventh of a traced noop step's cost (bench.tracing). Emptied when full.
        self._parents: dict[str, otel_context.Context] = {}

    # Runs: made where the run starts or resumes, ended at once.

    def run_started(self, run: RunTrace, approvers: tuple[str, ...], *, rerun_of: str = "") -> str:
        links = []
        if rerun_of:
            links.append(Link(_span_context(rerun_of), {"forge.link": names.RERUN_LINK}))
        # An empty context: a run's trace is its own, never a web request's.
        span = self._tracer.start_span(
            names.run_span_name(run.plan_name),
            context=otel_context.Context(),
            kind=SpanKind.INTERNAL,
            attributes=_run_attributes(run),
            links=links,
        )
        return self._ended(span, approvers)

    def run_resumed(
        self, run: RunTrace, previous: str, approvers: tuple[str, ...], from_version: int
    ) -> str:
        link = Link(
            _span_context(previous),
            {"forge.link": names.REPLAN_LINK, "forge.plan.from_version": from_version},
        )
        span = self._tracer.start_span(
            names.run_span_name(run.plan_name),
            context=_context(previous),
            kind=SpanKind.INTERNAL,
            attributes=_run_attributes(run),
            links=[link],
        )
        return self._ended(span, approvers)

    def _ended(self, span: Span, approvers: tuple[str, ...]) -> str:
        for approver in approvers:
            span.add_event(names.APPROVAL_EVENT, {names.APPROVER: approver})
        carrier: dict[str, str] = {}
        _PROPAGATOR.inject(carrier, context=trace.set_span_in_context(span))
        span.end()
        return carrier.get("traceparent", "")

    # Steps, tool calls and model turns: spans around the work, in the working thread.

    @contextmanager
    def step(
        self, step: StepTrace, step_id: str, *, attempt: int, agent: bool
    ) -> Iterator[_StepSpan]:
        attributes: dict[str, Any] = {
            names.RUN_ID: step.run_id,
            names.PLAN_ID: step.plan_id,
            names.PLAN_VERSION: step.plan_version,
            names.STEP_ID: step_id,
            names.STEP_ATTEMPT: attempt,
        }
        if agent:
            attributes |= {names.OPERATION: "invoke_agent", names.AGENT_NAME: step_id}
        token = self._step.set((step, step_id))
        try:
            with self._current(
                names.step_span_name(step_id, agent=agent),
                SpanKind.INTERNAL,
                attributes,
                parent=self._parent(step.traceparent),
            ) as span:
                if step.approved_by:
                    span.add_event(names.APPROVAL_EVENT, {names.APPROVER: step.approved_by})
                yield _StepSpan(span, self.content)
        finally:
            self._step.reset(token)

    @contextmanager
    def tool_call(
        self, tool: str, run_id: str, step_id: str, arguments: Mapping[str, Any]
    ) -> Iterator[_ToolSpan]:
        attributes: dict[str, Any] = {
            names.OPERATION: "execute_tool",
            names.TOOL_NAME: tool,
            names.TOOL_TYPE: "function",
            names.RUN_ID: run_id,
            names.STEP_ID: step_id,
        }
        if (open_step := self._step.get()) is not None:
            step = open_step[0]
            attributes |= {names.PLAN_ID: step.plan_id, names.PLAN_VERSION: step.plan_version}
        if self.content:
            attributes[names.TOOL_ARGUMENTS] = redacted_json(arguments)
        with self._current(names.tool_span_name(tool), SpanKind.INTERNAL, attributes) as span:
            yield _ToolSpan(span, self.content)

    @contextmanager
    def chat(self, model: str) -> Iterator[_ChatSpan]:
        attributes: dict[str, Any] = {names.OPERATION: "chat", names.REQUEST_MODEL: model}
        if (open_step := self._step.get()) is not None:
            step, step_id = open_step
            attributes |= {
                names.RUN_ID: step.run_id,
                names.PLAN_ID: step.plan_id,
                names.PLAN_VERSION: step.plan_version,
                names.STEP_ID: step_id,
            }
        with self._current(names.chat_span_name(model), SpanKind.CLIENT, attributes) as span:
            yield _ChatSpan(span)

    def flush(self) -> None:
        self.provider.force_flush()

    @contextmanager
    def _current(
        self,
        name: str,
        kind: SpanKind,
        attributes: dict[str, Any],
        parent: otel_context.Context | None = None,
    ) -> Iterator[Span]:
        """A span, current in this thread while the block runs (an exception recorded
        and re-raised). What ``start_as_current_span`` does, without its layers of
        context managers: they were a seventh of a traced noop step's span cost."""
        span = self._tracer.start_span(name, context=parent, kind=kind, attributes=attributes)
        token = otel_context.attach(trace.set_span_in_context(span))
        try:
            yield span
        except BaseException as error:
            span.record_exception(error)
            span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {error}"))
            raise
        finally:
            otel_context.detach(token)
            span.end()

    def _parent(self, traceparent: str) -> otel_context.Context:
        parent = self._parents.get(traceparent)
        if parent is None:
            if len(self._parents) >= _PARENTS_KEPT:
                self._parents.clear()
            parent = self._parents[traceparent] = _context(traceparent)
        return parent


class _StepSpan:
    def __init__(self, span: Span, content: bool) -> None:
        self._span, self._content = span, content

    def ended(self, status: str, *, output: Any, error_code: str, tokens: int, cost: float) -> None:
        span = self._span
        span.set_attribute(names.STEP_RESULT, status)
        if tokens:
            span.set_attribute(names.USAGE_TOKENS, tokens)
        if cost:
            span.set_attribute(names.USAGE_COST, cost)
        if self._content and output is not None:
            span.set_attribute(names.STEP_OUTPUT, redacted_json(output))
        _set_outcome(span, status, error_code)


class _ToolSpan:
    def __init__(self, span: Span, content: bool) -> None:
        self._span, self._content = span, content

    def ended(self, status: str, *, output: Any, error_code: str, call_id: str) -> None:
        span = self._span
        if call_id:
            span.set_attribute(names.TOOL_CALL_ID, call_id)
        if self._content and output is not None:
            span.set_attribute(names.TOOL_RESULT, redacted_json(output))
        _set_outcome(span, status, error_code)


class _ChatSpan:
    def __init__(self, span: Span) -> None:
        self._span = span

    def ended(self, *, response_model: str, input_tokens: int, output_tokens: int) -> None:
        if response_model:
            self._span.set_attribute(names.RESPONSE_MODEL, response_model)
        self._span.set_attribute(names.USAGE_INPUT_TOKENS, input_tokens)
        self._span.set_attribute(names.USAGE_OUTPUT_TOKENS, output_tokens)


def redacted_json(value: Any) -> str:
    """``value`` as the audit trail would keep it (``redact``), as compact JSON text."""
    return json.dumps(redact(value), separators=(",", ":"), sort_keys=True, default=str)


def _set_outcome(span: Span, status: str, error_code: str) -> None:
    if status != "succeeded":
        span.set_status(Status(StatusCode.ERROR, error_code or status))
        if error_code:
            span.set_attribute(names.ERROR_CODE, error_code)
            span.set_attribute("error.type", error_code)


def _run_attributes(run: RunTrace) -> dict[str, Any]:
    return {
        names.OPERATION: "invoke_agent",
        names.AGENT_NAME: run.plan_name,
        names.RUN_ID: run.run_id,
        names.PLAN_ID: run.plan_id,
        names.PLAN_NAME: run.plan_name,
        names.PLAN_VERSION: run.plan_version,
    }


def _context(traceparent: str) -> otel_context.Context:
    """The context a stored ``traceparent`` names (an empty one when there is none:
    the span then starts a trace of its own)."""
    if not traceparent:
        return otel_context.Context()
    return _PROPAGATOR.extract({"traceparent": traceparent})


def _span_context(traceparent: str) -> trace.SpanContext:
    return trace.get_current_span(_context(traceparent)).get_span_context()
