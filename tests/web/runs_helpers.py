"""Helpers for run tests: make approved versions and drain the task queue in-process."""

from __future__ import annotations

from typing import Any
from unittest import mock

from django.db import connection
from django_tasks_db.management.commands import db_worker
from django_tasks_db.management.commands.db_worker import Worker

from forge.plan import from_data
from plans import services as plan_services
from runs.slots import SlotWorker

# A contract that fails (the risk is over 10), and its fix.
FAILING_STEPS = [
    {"id": "fetch", "description": "Load the orders", "tool": "echo", "args": {"orders": 48}},
    {
        "id": "score",
        "description": "Score the delivery risk",
        "tool": "echo",
        "args": {"risk": 14.6},
        "depends_on": ["fetch"],
        "done_when": {"required_keys": ["risk"], "checks": ["risk <= `10`"]},
    },
]
FIXED_STEPS = [FAILING_STEPS[0], {**FAILING_STEPS[1], "args": {"risk": 9.0}}]


def approved_version(author: Any, approver: Any, steps: list[dict[str, Any]], **fields: Any) -> Any:
    data = {"goal": "Prepare the supplier risk report", **fields, "steps": steps}
    version = plan_services.create_plan(author, "Supplier risk", from_data(data))
    plan_services.approve(version, approver, "looks right")
    version.refresh_from_db()
    return version


def new_version(version: Any, author: Any, steps: list[dict[str, Any]], **fields: Any) -> Any:
    data = {"goal": "Prepare the supplier risk report", **fields, "steps": steps}
    return plan_services.create_version(version.plan, author, from_data(data), note="replan")


def drain() -> None:
    """Run every queued task, as a worker process would, until the queue is empty.

    The worker closes "old" connections between tasks; inside a test's transaction
    (autocommit off) Django counts the connection as unusable, and on PostgreSQL closing
    it would drop the test's data. A worker process is never inside one, so the test keeps
    its connection while it drains."""
    if connection.in_atomic_block:
        with mock.patch(f"{db_worker.__name__}.close_old_connections", lambda: None):
            _worker().run()
    else:
        _worker().run()


def _worker() -> Worker:
    return Worker(
        queue_names=["default"],
        interval=0,
        batch=True,
        backend_name="default",
        startup_delay=False,
        max_tasks=None,
        worker_id="test-worker",
        excluded_queue_names=[],
    )


def drain_slots(concurrency: int) -> SlotWorker:
    """Run every queued task on ``concurrency`` slots at once, as a worker process with
    ``FORGE_WORKER_CONCURRENCY`` does, until the queue is empty and the slots idle."""
    slots = SlotWorker(concurrency=concurrency, worker_id="test-slots", interval=0.01, batch=True)
    slots.run()
    return slots
