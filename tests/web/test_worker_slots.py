"""A worker's slots (``runs.slots``): steps of one run, and of several, run at once in
one worker process, and every guarantee of one-at-a-time holds: no step runs twice,
seqs stay gapless, the budget holds, and the approval gate is checked at admission.

On PostgreSQL (the ``make test`` pass with DATABASE_URL): the test database of the SQLite
pass lives in memory, shared between threads with table locks that no busy timeout
waits for, which no deployment has. tests/integration/test_worker_slots.py runs the same
guarantees on real processes over an SQLite file (WAL) and over PostgreSQL."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from plans.models import PlanVersion
from runs import engine
from runs.models import ExecutionRecord, Run, RunEvent
from runs.services import start_run

from .runs_helpers import approved_version, drain_slots

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgres]


def _waits(count: int, seconds: float = 0.2, cost: float | None = None) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = [
        {
            "id": f"wait{i}",
            "description": f"Wait for supplier {i}",
            "tool": "sleep",
            "args": {"seconds": seconds},
            **({"estimate": {"cost": cost}} if cost is not None else {}),
        }
        for i in range(count)
    ]
    steps.append(
        {
            "id": "total",
            "description": "Join the waits",
            "tool": "noop",
            "depends_on": [s["id"] for s in steps],
        }
    )
    return steps


def _most_at_once(run: Run) -> int:
    """The most steps running together, folded from the run's events in seq order."""
    running = most = 0
    for event in RunEvent.objects.filter(run=run).order_by("seq"):
        if event.event_type == "step_started":
            running += 1
        elif event.step_id and event.transition and event.transition[0] == "running":
            running -= 1
        most = max(most, running)
    return most


def _executed(run: Run) -> list[str]:
    return list(ExecutionRecord.objects.filter(run_id=run.pk).values_list("step_id", flat=True))


def _assert_gapless(run: Run) -> None:
    seqs = list(RunEvent.objects.filter(run=run).order_by("seq").values_list("seq", flat=True))
    assert seqs == list(range(1, len(seqs) + 1))
    assert Run.objects.get(pk=run.pk).last_seq == len(seqs)


def test_slots_run_a_fan_out_at_once_and_no_step_twice(author, approver, operator):
    version = approved_version(author, approver, _waits(8))
    run = start_run(version, operator)

    slots = drain_slots(4)

    run.refresh_from_db()
    assert run.status == "succeeded"
    executed = _executed(run)
    assert sorted(executed) == sorted([f"wait{i}" for i in range(8)] + ["total"])
    assert 2 <= _most_at_once(run) <= 4
    _assert_gapless(run)
    assert slots.busy == 0


def test_slots_share_out_several_runs_and_keep_each_runs_seqs_gapless(author, approver, operator):
    version = approved_version(author, approver, _waits(3, seconds=0.1))
    runs = [start_run(version, operator) for _ in range(4)]

    drain_slots(6)

    for run in runs:
        run.refresh_from_db()
        assert run.status == "succeeded"
        assert len(_executed(run)) == len(set(_executed(run))) == 4
        _assert_gapless(run)


def test_the_budget_holds_when_slots_admit_steps_together(author, approver, operator):
    version = approved_version(author, approver, _waits(12, cost=1.0), budget={"max_cost": 8})
    run = start_run(version, operator)

    drain_slots(6)

    run.refresh_from_db()
    assert run.status == "budget_exhausted"
    assert run.used_cost <= 8.0
    executed = _executed(run)
    assert len(executed) == len(set(executed)) == 8
    _assert_gapless(run)


def test_slots_check_the_gate_at_admission(author, approver, operator):
    version = approved_version(author, approver, _waits(4))
    run = start_run(version, operator)
    changed = copy.deepcopy(version.document)
    changed["steps"][0]["args"] = {"seconds": 30}
    PlanVersion.objects.filter(pk=version.pk).update(document=changed)
    # A worker process that has not compiled this version yet reads it as it is now.
    engine._SCHEDULERS.clear()
    engine._GRAPHS.clear()

    drain_slots(4)

    run.refresh_from_db()
    assert run.status == "failed"
    refused = RunEvent.objects.get(run=run, event_type="run_failed")
    assert refused.facts == {"gate": "content_changed"}
    assert _executed(run) == []
    _assert_gapless(run)
