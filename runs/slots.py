"""A worker's slots: up to ``FORGE_WORKER_CONCURRENCY`` steps at once in one process.

The step a slot runs mostly waits (a model, an HTTP call, a subprocess, a ``sleep``), so
the slots are threads: a waiting thread costs a stack and, on PostgreSQL, a database
connection, where a process would cost another interpreter (about 100 MiB) and asyncio
would mean rewriting the ORM, the executor and every runner. The thread that waits holds
no lock and no transaction, so the slots overlap exactly where steps wait, and every
decision still goes through ``runs.engine.locked_run`` (the run's lock, gapless seqs) and
``runs.worker`` (compare-and-swap claims with a fencing token, leases, the gate checked
at admission), one short transaction at a time, whichever slot makes it.

The main thread claims queued tasks, as many as there are free slots, in one short
transaction (``SELECT ... FOR UPDATE SKIP LOCKED`` on PostgreSQL; on SQLite the
IMMEDIATE transaction already holds the only write lock) and hands each to a free slot.
A slot that finishes wakes it, so the next task starts without waiting for a poll.
"""

from __future__ import annotations

import logging
import os
import queue
import signal
import threading
from dataclasses import dataclass, field
from types import FrameType

from django.db import (
    OperationalError,
    close_old_connections,
    connection,
    connections,
    transaction,
)
from django.utils import timezone
from django_tasks_db.compat import TaskResultStatus, task_finished, task_started
from django_tasks_db.models import DBTaskResult
from django_tasks_db.utils import is_locked_database_exception

from runs.timings import TIMINGS

logger = logging.getLogger(__name__)

__all__ = ["SlotWorker"]


@dataclass
class SlotWorker:
    """Runs queued tasks on ``concurrency`` threads. ``batch``: stop once the queue is
    empty and every slot is idle (tests and one-off drains)."""

    concurrency: int
    worker_id: str
    interval: float = 0.2
    queue_names: tuple[str, ...] = ("default",)
    backend_name: str = "default"
    batch: bool = False
    running: bool = field(default=True, init=False)
    _busy: int = field(default=0, init=False)
    _state: threading.Condition = field(default_factory=threading.Condition, init=False)
    _ran: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ValueError("a worker needs at least one slot")

    @property
    def busy(self) -> int:
        """How many slots run a task now."""
        return self._busy

    @property
    def ran(self) -> int:
        """How many tasks the slots finished."""
        return self._ran

    def run(self) -> None:
        logger.info("worker %s runs up to %d steps at once", self.worker_id, self.concurrency)
        tasks: queue.SimpleQueue[DBTaskResult | None] = queue.SimpleQueue()
        slots = [
            threading.Thread(target=self._slot, args=(tasks,), name=f"forge-slot-{n}")
            for n in range(self.concurrency)
        ]
        for slot in slots:
            slot.start()
        try:
            while self.running:
                free = self._wait_for_a_free_slot()
                if not self.running:
                    break
                close_old_connections()
                claimed = self._claim(free)
                for task in claimed:
                    with self._state:
                        self._busy += 1
                    tasks.put(task)
                if claimed:
                    continue
                with self._state:
                    if self.batch and self._busy == 0:
                        break
                    # Woken early by a slot that finished (it may have queued steps).
                    self._state.wait(self.interval)
        finally:
            self._wait_for_idle()
            for _ in slots:
                tasks.put(None)
            for slot in slots:
                slot.join()
            connection.close()

    def _slot(self, tasks: queue.SimpleQueue[DBTaskResult | None]) -> None:
        try:
            while (task := tasks.get()) is not None:
                self._run(task)
        finally:
            connections.close_all()  # this thread's own connection

    def stop(self, *_: object) -> None:
        with self._state:
            self.running = False
            self._state.notify_all()

    def configure_signals(self) -> None:
        """The first SIGINT/SIGTERM stops claiming and lets running steps finish; the
        second exits at once (their leases run out and another worker takes them)."""

        def shutdown(signum: int, frame: FrameType | None) -> None:
            if not self.running:
                logger.warning("%s again: leaving the running steps", signal.strsignal(signum))
                os._exit(1)  # the slots' threads would otherwise be joined at exit
            logger.warning(
                "%s: finishing %d running step(s), then stopping (again to force)",
                signal.strsignal(signum),
                self._busy,
            )
            self.stop()

        for name in ("SIGINT", "SIGTERM", "SIGQUIT"):
            if hasattr(signal, name):
                signal.signal(getattr(signal, name), shutdown)

    def _wait_for_a_free_slot(self) -> int:
        with self._state:
            while self.running and self._busy >= self.concurrency:
                self._state.wait(1.0)  # a timeout keeps signals handled promptly
            return self.concurrency - self._busy

    def _wait_for_idle(self) -> None:
        with self._state:
            while self._busy:
                self._state.wait(1.0)

    def _claim(self, limit: int) -> list[DBTaskResult]:
        """Up to ``limit`` ready tasks, marked running for this worker, in one short
        transaction; none while another writer holds SQLite's lock."""
        tasks = DBTaskResult.objects.ready().filter(backend_name=self.backend_name)
        if "*" not in self.queue_names:
            tasks = tasks.filter(queue_name__in=self.queue_names)
        # A read first, outside any transaction: polling an empty queue takes no write
        # lock (on SQLite the only one, which the slots' decisions need).
        if not tasks.exists():
            return []
        try:
            with TIMINGS.timed("queue_claim"), transaction.atomic():
                # in the queue's order (priority, then age): its Meta.ordering
                claimed = list(tasks.select_for_update(skip_locked=True)[:limit])
                if claimed:
                    now = timezone.now()
                    for task in claimed:
                        task.status = TaskResultStatus.RUNNING
                        task.started_at = now
                        task.worker_ids = [*task.worker_ids, self.worker_id]
                    DBTaskResult.objects.bulk_update(
                        claimed, ["status", "started_at", "worker_ids"]
                    )
        except OperationalError as error:
            if is_locked_database_exception(error):
                return []
            raise
        return claimed

    def _run(self, db_task: DBTaskResult) -> None:
        """One task on a slot, recorded as django-tasks-db's worker records it."""
        try:
            task = db_task.task
            result = db_task.task_result
            backend = type(task.get_backend())
            task_started.send(sender=backend, task_result=result)
            with TIMINGS.timed("task"):
                value = task.call(*result.args, **result.kwargs)
            # In a transaction, like every write of the slots: on SQLite it then queues
            # on the process's writer lock (forge_web.sqlite), not in the busy handler.
            with TIMINGS.timed("queue_done"), transaction.atomic():
                db_task.set_successful(value)
            task_finished.send(sender=backend, task_result=db_task.task_result)
        except BaseException as error:  # a slot survives whatever its task raised
            logger.exception("task %s failed", db_task.id)
            try:
                with transaction.atomic():
                    db_task.set_failed(error)
            except Exception:
                logger.exception("could not record the failure of task %s", db_task.id)
        finally:
            close_old_connections()
            with self._state:
                self._busy -= 1
                self._ran += 1
                self._state.notify_all()
