"""The queue's side of running steps: ``run_step`` tasks queued in bulk, and the task of
a step a worker took straight from the run marked done (django-tasks-db's rows; with
another ``django.tasks`` backend, tasks are queued one by one and nothing is settled)."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from django.tasks import Task
from django.utils import timezone
from django.utils.json import normalize_json
from django_tasks_db.backend import DatabaseBackend
from django_tasks_db.compat import TaskResultStatus
from django_tasks_db.models import DBTaskResult, get_date_max

from runs.sql import Statement, Update

_NAMESPACE = uuid.UUID("6f0e8a52-2c1d-4a43-9d0f-3a8f7f4c2b10")


def task_id(run_id: int, plan_version: int, step_id: str, attempt: int) -> uuid.UUID:
    """The id of the task that runs ``step_id`` once it is ready after ``attempt`` starts.

    A step is ready at most once per (version, attempts so far): every start counts an
    attempt, and a resume moves to a new version. So the id names one ready step, and a
    worker that takes the step straight from the run can mark its task done by id."""
    return uuid.uuid5(_NAMESPACE, f"{run_id}:{plan_version}:{step_id}:{attempt}")


def enqueue_steps(run_id: int, plan_version: int, steps: Sequence[tuple[str, int]]) -> None:
    """Queue ``run_step`` for each ready ``(step_id, attempts so far)``, in the caller's
    transaction: on the database backend one INSERT for them all (a fan-out's hundreds
    of steps are queued while the run's lock is held), each task with its ``task_id``;
    on any other backend, one ``enqueue`` each."""
    run_step = _task()
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


def _task() -> Task[[int, str], None]:
    from runs.tasks import run_step  # tasks import the worker, which imports this module

    return run_step
