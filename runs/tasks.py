"""Django Tasks entry points: the code talks to ``django.tasks``, so the backend is
configuration (django-tasks-db by default). ``runs.queue`` queues them (``runs.apps``
hands them to it)."""

from __future__ import annotations

from django.tasks import task

from runs import replanning, worker


@task()
def run_step(run_id: int, step_id: str) -> None:
    worker.run_step(run_id, step_id)


@task()
def replan_run(run_id: int, trigger_seq: int) -> None:
    """Ask the planner for the next version of a run of ``replan: auto``."""
    replanning.replan_automatically(run_id, trigger_seq)


@task()
def resume_approved_replan(version_id: int, approver: str) -> None:
    """A person approved a planner's replan: the runs waiting for it resume."""
    replanning.resume_after_approval(version_id, approver)
