"""The one place that queues the runs app's tasks, and what a run's transaction queues.

What a decision made ready is queued in the same transaction (``enqueue_for``, called by
``runs.engine.locked_run``): ``run_step`` tasks in bulk (django-tasks-db's rows; with
another ``django.tasks`` backend, one by one), a lease retry's after its backoff, and a
``replan_run`` when a run of ``replan: auto`` needed a replan. A person's approval of a
planner's replan queues ``resume_approved_replan`` (``on_version_approved``). The task of
a step a worker took straight from the run is marked done (``settle_queued``).

The tasks themselves (``runs.tasks``) call the worker and the replanner, which call the
engine, which calls this module: so this module does not import them, it is handed them
once, when the app is ready (``plug``, from ``runs.apps``).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.tasks import Task
from django.utils import timezone
from django.utils.json import normalize_json
from django_tasks_db.backend import DatabaseBackend
from django_tasks_db.compat import TaskResultStatus
from django_tasks_db.models import DBTaskResult, get_date_max

from forge.runtime import Scheduler
from forge.runtime.events import EventType
from plans.models import PlannerProposal
from runs.sql import Statement, Update

__all__ = [
    "EntryPoints",
    "enqueue_for",
    "enqueue_steps",
    "on_version_approved",
    "plug",
    "settle_queued",
    "task_id",
]


@dataclass(frozen=True)
class EntryPoints:
    """The runs app's tasks (``runs.tasks``), as this module queues them."""

    run_step: Task[[int, str], None]
    replan_run: Task[[int, int], None]
    resume_approved_replan: Task[[int, str], None]


_plugged: list[EntryPoints] = []


def plug(entry_points: EntryPoints) -> None:
    """Hand this module the tasks it queues; ``runs.apps`` does, once the app is ready."""
    _plugged[:] = [entry_points]


def _tasks() -> EntryPoints:
    if not _plugged:
        raise RuntimeError("runs.queue was handed no tasks: the runs app is not ready")
    return _plugged[0]


_NAMESPACE = uuid.UUID("6f0e8a52-2c1d-4a43-9d0f-3a8f7f4c2b10")


def task_id(run_id: int, plan_version: int, step_id: str, attempt: int) -> uuid.UUID:
    """The id of the task that runs ``step_id`` once it is ready after ``attempt`` starts.

    A step is ready at most once per (version, attempts so far): every start counts an
    attempt, and a resume moves to a new version. So the id names one ready step, and a
    worker that takes the step straight from the run can mark its task done by id."""
    return uuid.uuid5(_NAMESPACE, f"{run_id}:{plan_version}:{step_id}:{attempt}")


def enqueue_for(
    run_id: int,
    scheduler: Scheduler,
    ready: Sequence[str],
    later: Sequence[tuple[str, float]],
) -> None:
    """In the run's transaction: ``run_step`` for each step of ``ready``, a delayed one
    for each ``(step, seconds)`` of ``later`` (a lease retry waiting out its backoff), and
    ``replan_run`` for each ``run_needs_replan`` the scheduler's events hold when the plan
    replans automatically (``replan: auto``: a worker asks the planner,
    ``runs.replanning``)."""
    if ready:
        steps = scheduler.state.steps
        enqueue_steps(
            run_id, scheduler.state.plan_version, [(sid, steps[sid].attempt) for sid in ready]
        )
    for step_id, seconds in later:
        after = timezone.now() + timedelta(seconds=seconds)
        _tasks().run_step.using(run_after=after).enqueue(run_id, step_id)
    if scheduler.graph.document.replan == "auto":
        for event in scheduler.events:
            if event.event_type == EventType.RUN_NEEDS_REPLAN:
                _tasks().replan_run.enqueue(run_id, event.seq)


def on_version_approved(sender: object, *, version_id: int, approver: str, **_: Any) -> None:
    """``plans.signals.version_approved``: if a planner proposed the version for runs of
    ``replan: auto``, a worker resumes them (one task; it does nothing for the rest)."""
    if PlannerProposal.objects.filter(version_id=version_id, run_id__isnull=False).exists():
        _tasks().resume_approved_replan.enqueue(version_id, approver)


def enqueue_steps(run_id: int, plan_version: int, steps: Sequence[tuple[str, int]]) -> None:
    """Queue ``run_step`` for each ready ``(step_id, attempts so far)``, in the caller's
    transaction: on the database backend one INSERT for them all (a fan-out's hundreds
    of steps are queued while the run's lock is held), each task with its ``task_id``;
    on any other backend, one ``enqueue`` each."""
    run_step = _tasks().run_step
    backend = run_step.get_backend()
    if not isinstance(backend, DatabaseBackend):
        for step_id, _ in steps:
            run_step.enqueue(run_id, step_id)
        return
    backend.validate_task(run_step)
    # (bulk_create sends no task_enqueued signal; Django logs it at DEBUG level only.) An
    # id met again would be a step queued twice for one readiness: it is not inserted.
    DBTaskResult.objects.bulk_create(
        [
            DBTaskResult(
                id=task_id(run_id, plan_version, step_id, attempt),
                args_kwargs=normalize_json({"args": [run_id, step_id], "kwargs": {}}),
                priority=run_step.priority,
                task_path=run_step.module_path,
                queue_name=run_step.queue_name,
                run_after=run_step.run_after or get_date_max(),  # what its pre_save sets
                backend_name=backend.alias,
            )
            for step_id, attempt in steps
        ],
        ignore_conflicts=True,
    )


_settle = Update(
    DBTaskResult,
    ("status", "started_at", "finished_at", "worker_ids"),
    where=("id", "status"),
)


def settle_queued(
    run_id: int, plan_version: int, step_id: str, attempt: int, worker_id: str
) -> Statement:
    """The write that marks the still-queued task of a step a worker took straight from
    the run (its ``attempt``-th start) as done, by primary key: for the transaction that
    records the step's result. A slot that claimed the task already finds the step taken
    and ends it itself."""
    now = timezone.now()
    return _settle.statement(
        {
            "status": TaskResultStatus.SUCCESSFUL,
            "started_at": now,
            "finished_at": now,
            "worker_ids": [worker_id],
        },
        task_id(run_id, plan_version, step_id, attempt - 1),
        TaskResultStatus.READY,
    )

