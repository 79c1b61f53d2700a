"""Django Tasks entry points: the code talks to ``django.tasks``, so the backend is
configuration (django-tasks-db by default)."""

from __future__ import annotations

from collections.abc import Sequence

from django.tasks import task
from django.utils import timezone
from django.utils.json import normalize_json
from django_tasks_db.backend import DatabaseBackend
from django_tasks_db.compat import TaskResultStatus
from django_tasks_db.models import DBTaskResult, get_date_max

from runs import worker


@task()
def run_step(run_id: int, step_id: str) -> None:
    worker.run_step(run_id, step_id)


def enqueue_steps(run_id: int, step_ids: Sequence[str]) -> None:
    """Queue ``run_step`` for each step, in the caller's transaction. On the database
    backend that is one INSERT for them all (a fan-out's hundreds of steps are queued
    while the run's lock is held); on any other backend, one ``enqueue`` each."""
    backend = run_step.get_backend()
    if not isinstance(backend, DatabaseBackend) or len(step_ids) == 1:
        for step_id in step_ids:
            run_step.enqueue(run_id, step_id)
        return
    backend.validate_task(run_step)
    # (bulk_create sends no task_enqueued signal; Django logs it at DEBUG level only)
    DBTaskResult.objects.bulk_create(
        DBTaskResult(
            id=backend._get_id(),
            args_kwargs=normalize_json({"args": [run_id, step_id], "kwargs": {}}),
            priority=run_step.priority,
            task_path=run_step.module_path,
            queue_name=run_step.queue_name,
            run_after=run_step.run_after or get_date_max(),  # what its pre_save sets
            backend_name=backend.alias,
        )
        for step_id in step_ids
    )


def settle_queued(run_id: int, step_id: str, worker_id: str) -> None:
    """Mark the still-queued ``run_step`` task of a step a worker took directly as done
    (in its own short transaction, outside the run's lock)."""
    if not isinstance(run_step.get_backend(), DatabaseBackend):
        return
    now = timezone.now()
    DBTaskResult.objects.filter(
        status=TaskResultStatus.READY,
        task_path=run_step.module_path,
        args_kwargs={"args": [run_id, step_id], "kwargs": {}},
    ).update(
        status=TaskResultStatus.SUCCESSFUL,
        started_at=now,
        finished_at=now,
        worker_ids=[worker_id],
    )
