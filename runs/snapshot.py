"""The live run page's starting point: the run's detail pinned to one ``seq``.

The page folds every event after the snapshot's ``last_seq`` into it, so the snapshot
must hold exactly the events up to that seq: a step that is newer than ``last_seq``
would take its start twice ("attempt 2" for a step that ran once, its tokens counted
twice). The run row and its steps are read by separate queries and a worker may commit
between them. Every transaction that changes a step also moves ``Run.last_seq``, so when
``last_seq`` reads the same before and after the steps, nothing committed in between (a
seqlock). A run that keeps moving through every try gets its steps rebuilt from its
events up to the run row's ``last_seq`` instead: events are immutable and gapless up to
a committed seq, so that answer is pinned by construction (slower, hence not the first
choice on a long run).
"""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404

from forge.runtime import StepState, rebuild
from runs import events as event_rows
from runs.api import detail
from runs.models import Run, RunEvent, StepRun

# A snapshot is read again this many times when events commit while it is read.
SNAPSHOT_ATTEMPTS = 5
# Events that end a step's time on a worker (the page's timeline bar).
_ENDS = frozenset(
    {
        "step_awaiting_approval",
        "step_succeeded",
        "step_failed",
        "step_invalid",
        "step_needs_reconciliation",
        "step_reconciled",
        "step_retried",
    }
)


def snapshot(run_id: int) -> tuple[Run, dict[str, Any]]:
    """The run and its detail (with running steps' reservations) as of its ``last_seq``."""
    runs = Run.objects.select_related("plan", "version", "version__author", "started_by")
    for _ in range(SNAPSHOT_ATTEMPTS):
        run = get_object_or_404(runs, pk=run_id)
        data = _with_reservations(run, detail(run))
        if Run.objects.filter(pk=run_id, last_seq=run.last_seq).exists():
            return run, data
    # Still moving: the run row of the last try is consistent with its own last_seq
    # (one transaction writes them all); the steps are rebuilt from the events up to it.
    return run, _steps_from_events(run, data)


def _with_reservations(run: Run, data: dict[str, Any]) -> dict[str, Any]:
    # A running step's reservation is settled by the event that ends it; the page needs
    # it to keep the budget gauges exact (the API's run detail does not carry it).
    reserved = {
        row["step_id"]: row
        for row in StepRun.objects.filter(
            run=run, plan_version=run.version.number, status="running"
        ).values("step_id", "reserved_tokens", "reserved_cost")
    }
    for step in data["steps"]:
        row = reserved.get(step["step_id"])
        step["reserved_tokens"] = row["reserved_tokens"] if row else 0
        step["reserved_cost"] = row["reserved_cost"] if row else 0.0
    return data


def _steps_from_events(run: Run, data: dict[str, Any]) -> dict[str, Any]:
    rows = list(RunEvent.objects.filter(run=run, seq__lte=run.last_seq).order_by("seq"))
    state = rebuild(str(run.pk), [event_rows.from_row(row) for row in rows])
    version = run.version.number
    timing: dict[str, dict[str, Any]] = {}
    previews: dict[str, Any] = {}
    for row in rows:
        if row.step_id is None or row.plan_version != version:
            continue
        if row.event_type == "step_started":
            timing[row.step_id] = {"started_at": row.created_at, "finished_at": None}
        elif row.event_type in _ENDS and row.step_id in timing:
            timing[row.step_id].update(finished_at=row.created_at, latency_ms=row.latency_ms)
        if row.event_type == "step_awaiting_approval":
            facts = row.facts if isinstance(row.facts, dict) else {}
            previews[row.step_id] = facts.get("preview")
    steps = []
    for step in data["steps"]:
        known: StepState = state.steps.get(step["step_id"]) or StepState()
        times = timing.get(step["step_id"], {})
        steps.append(
            {
                **step,
                "status": known.status,
                "attempt": known.attempt,
                "output": known.output,
                "error": known.error,
                "verdict": known.verdict,
                "tokens": known.tokens,
                "cost": known.cost,
                "reserved_tokens": known.reserved_tokens,
                "reserved_cost": known.reserved_cost,
                "approved_by": known.approved_by,
                "artifacts": list(known.artifacts),
                "preview": previews.get(step["step_id"])
                if known.status == "awaiting_approval"
                else None,
                "started_at": times.get("started_at"),
                "finished_at": times.get("finished_at"),
                "latency_ms": times.get("latency_ms"),
            }
        )
    return {**data, "steps": steps}
