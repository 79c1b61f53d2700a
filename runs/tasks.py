"""Django Tasks entry points: the code talks to ``django.tasks``, so the backend is
configuration (django-tasks-db by default)."""

from __future__ import annotations

from django.tasks import task

from runs import worker


@task()
def run_step(run_id: int, step_id: str) -> None:
    worker.run_step(run_id, step_id)
