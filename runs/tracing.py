"""A run's trace on the Django side: the tracing installed in each web and worker process,
the span of each version a run runs (made where the run starts, re-runs or resumes, its
W3C ``traceparent`` stored on ``Run.trace_context`` in the same transaction, before any
step of it is queued), and what a worker's step span takes from the run.

With tracing off (no ``OTEL_EXPORTER_OTLP_ENDPOINT``) every function here returns at
its first line, and OpenTelemetry is never imported.
"""

from __future__ import annotations

import os

from django.core.exceptions import ImproperlyConfigured

from forge.runtime.gate import VersionApproval
from forge.telemetry.environment import TraceContentInvalid, tracing_wanted
from forge.telemetry.switch import RunTrace, StepTrace, current, install
from plans.models import PlanVersion
from runs.models import Run

__all__ = ["configure", "run_resumed", "run_started", "step_trace"]


def configure() -> None:
    """Install the tracing the environment asks for, once per process (``runs.apps``).
    ``FORGE_TRACE_CONTENT`` other than 0 or 1 stops the start-up (``ImproperlyConfigured``)."""
    if current() is not None:
        return
    if not tracing_wanted(os.environ):
        return
    # Imported only when tracing is on: a process that does not trace never loads the
    # OpenTelemetry SDK (its cost when off is the check above).
    from forge.telemetry.setup import tracing_from_env

    try:
        tracing = tracing_from_env(os.environ)
    except TraceContentInvalid as refused:
        # As every other setting that does not parse: one line naming the variable.
        raise ImproperlyConfigured(refused.message) from None
    if tracing is not None:
        install(tracing)


def run_started(
    run: Run, version: PlanVersion, approval: VersionApproval, rerun_of: Run | None = None
) -> None:
    """The span of ``run``'s first version; a re-run's is linked to the run it re-ran.
    Call inside the transaction that creates the run."""
    tracing = current()
    if tracing is None:
        return
    traceparent = tracing.run_started(
        _run_trace(run, version),
        _approvers(approval),
        rerun_of=rerun_of.trace_context if rerun_of is not None else "",
    )
    _store(run, traceparent)


def run_resumed(
    run: Run, version: PlanVersion, previous: PlanVersion, approval: VersionApproval
) -> None:
    """The span of the version ``run`` resumes on, under and linked to the span of the
    version it replaced. Call under the run's lock, before its steps are queued."""
    tracing = current()
    if tracing is None:
        return
    traceparent = tracing.run_resumed(
        _run_trace(run, version), run.trace_context, _approvers(approval), previous.number
    )
    _store(run, traceparent)


def step_trace(run: Run, plan_version: int, approved_by: str) -> StepTrace | None:
    """What a step's span takes from ``run`` (read under its lock), or ``None`` when this
    process does not trace."""
    if current() is None:
        return None
    return StepTrace(
        traceparent=run.trace_context,
        run_id=str(run.pk),
        plan_id=str(run.plan_id),
        plan_version=plan_version,
        approved_by=approved_by,
    )


def _store(run: Run, traceparent: str) -> None:
    Run.objects.filter(pk=run.pk).update(trace_context=traceparent)
    run.trace_context = traceparent


def _run_trace(run: Run, version: PlanVersion) -> RunTrace:
    return RunTrace(str(run.pk), str(version.plan_id), version.plan.name, version.number)


def _approvers(approval: VersionApproval) -> tuple[str, ...]:
    label = "policy" if approval.by_policy else approval.approver
    return (label, *(other.approver for other in approval.others))
