"""Whether this process traces, and what the core's hooks may ask of a tracer.

``current()`` is the one question a hook asks: ``None`` (the default) means tracing is
off, and the hook runs its work and nothing else. The host installs a ``Tracing``
(``install``) once, at start-up; tests install and uninstall their own. The port speaks
in plain values (names, ids, mappings) so that this module, which the runtime imports,
imports nothing of the runtime, and nothing of OpenTelemetry either.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = [
    "ChatSpan",
    "RunTrace",
    "StepSpan",
    "StepTrace",
    "ToolSpan",
    "Tracing",
    "current",
    "install",
    "uninstall",
]


@dataclass(frozen=True)
class RunTrace:
    """One run on one plan version: what its span says."""

    run_id: str
    plan_id: str
    plan_name: str
    plan_version: int


@dataclass(frozen=True)
class StepTrace:
    """What a step's span needs from its run: the W3C ``traceparent`` of the span of the
    version it runs (stored on the run: one trace per run, across processes), the ids,
    and who approved the step (a span event), if anyone did."""

    traceparent: str
    run_id: str
    plan_id: str
    plan_version: int
    approved_by: str = ""


class StepSpan(Protocol):
    def ended(
        self, status: str, *, output: Any, error_code: str, tokens: int, cost: float
    ) -> None: ...


class ToolSpan(Protocol):
    def ended(self, status: str, *, output: Any, error_code: str, call_id: str) -> None: ...


class ChatSpan(Protocol):
    def ended(self, *, response_model: str, input_tokens: int, output_tokens: int) -> None: ...


class Tracing(Protocol):
    """What the hooks and the host ask of a tracer (``forge.telemetry.otel``)."""

    def run_started(self, run: RunTrace, approvers: tuple[str, ...], *, rerun_of: str = "") -> str:
        """The span of a run's first version, ended at once; returns its traceparent.
        ``rerun_of`` is the traceparent of the run re-run, linked."""
        ...

    def run_resumed(
        self, run: RunTrace, previous: str, approvers: tuple[str, ...], from_version: int
    ) -> str:
        """The span of a replan's version, in the run's trace under the span of the
        version it replaced (``previous``, a traceparent) and linked to it; returns its
        traceparent."""
        ...

    def step(
        self, trace: StepTrace, step_id: str, *, attempt: int, agent: bool
    ) -> AbstractContextManager[StepSpan]: ...

    def tool_call(
        self, tool: str, run_id: str, step_id: str, arguments: Mapping[str, Any]
    ) -> AbstractContextManager[ToolSpan]: ...

    def chat(self, model: str) -> AbstractContextManager[ChatSpan]: ...

    def flush(self) -> None: ...


_installed: list[Tracing] = []


def current() -> Tracing | None:
    """The installed tracing, or ``None`` when this process does not trace."""
    return _installed[0] if _installed else None


def install(tracing: Tracing) -> None:
    """Trace with ``tracing`` from now on (replacing any installed before)."""
    _installed[:] = [tracing]


def uninstall() -> None:
    _installed.clear()
