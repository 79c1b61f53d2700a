"""A worker's slots: up to ``FORGE_WORKER_CONCURRENCY`` steps at once in one process.

The step a slot runs mostly waits (a model, an HTTP call, a subprocess, a ``sleep``), so
the slots are threads: a waiting thread costs a stack and, on PostgreSQL, a database
connection, where a process would cost another interpreter (about 100 MiB) and asyncio
would mean rewriting the ORM, the executor and every runner. The thread that waits holds
no lock and no transaction, so the slots overlap exactly where steps wait, and every
decision still goes through ``runs.engine.locked_run`` (the run's lock, gapless seqs) and
``runs.worker`` (compare-and-swap claims with a fencing token, leases, the gate checked
at admission), one short transaction at a time, whichever slot makes it; slots that want
one run's lock at once share that transaction (``runs.decisions``).

The main thread claims queued tasks, as many as there are free slots, in one short
transaction (``SELECT ... FOR UPDATE SKIP LOCKED`` on PostgreSQL; on SQLite the
IMMEDIATE transaction already holds the only write lock), a task of each run before a
second of any (``spread``), and hands each to a free slot. A slot that finishes wakes
it, so the next task starts without waiting for a poll.

A database outage is ridden out (``accounts.outages``): the main thread claims again
after a capped, jittered backoff, each slot records what it was doing once the database
is back (``runs.worker``), and the outage is logged once when it starts and once when it
ends. Past ``FORGE_DB_OUTAGE_SECONDS`` the worker stops with ``DatabaseAway``, for its
supervisor to start it again.
"""

from __future__ import annotations

import functools
import logging
import os
import queue
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from django.db import (
    DatabaseError,
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

from accounts.outages import DatabaseAway, Reconnects, note_database_failure, ride_out
from runs.capacity import fit_pool
from runs.tasks import run_step
from runs.timings import TIMINGS

logger = logging.getLogger(__name__)

__all__ = ["SlotWorker", "spread"]

# A claim looks at up to this many queued tasks per free slot for steps of other runs.
_WINDOW = 4


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
    # Why the worker stops: a slot that met the database away past the limit.
    _gave_up: DatabaseAway | None = field(default=None, init=False)

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
        # A connection for each slot and for the worker's own threads, never more.
        fit_pool(self.concurrency)
        logger.info("worker %s runs up to %d steps at once", self.worker_id, self.concurrency)
        tasks: queue.SimpleQueue[DBTaskResult | None] = queue.SimpleQueue()
        slots = [
            threading.Thread(target=self._slot, args=(tasks,), name=f"forge-slot-{n}")
            for n in range(self.concurrency)
        ]
        for slot in slots:
            slot.start()
        reconnects = Reconnects()
        polled_empty = False
        try:
            while self.running:
                free = self._wait_for_a_free_slot()
                if not self.running:
                    break
                # An empty poll keeps its connection for the next: closing it each time
                # (SQLite's CONN_MAX_AGE is 0) made an idle worker reconnect at every
                # poll, nearly half of what it spent idle. After a claim or a failure the
                # connection is checked and closed as Django's request cycle would.
                if not polled_empty:
                    close_old_connections()
                try:
                    claimed = self._claim(free)
                except Exception as error:
                    polled_empty = False
                    pause = reconnects.failed(error)  # raised again unless an outage
                    with self._state:
                        self._state.wait(pause)  # stop() still wakes it
                    continue
                reconnects.succeeded()
                polled_empty = not claimed
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
        if self._gave_up is not None:
            raise self._gave_up

    def _slot(self, tasks: queue.SimpleQueue[DBTaskResult | None]) -> None:
        try:
            _connect()
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
                # A window of the queue, in its order (priority, then age: Meta.ordering),
                # from which the slots take steps of as many runs as they can.
                window = tasks.select_for_update(skip_locked=True)[: limit * _WINDOW]
                claimed = spread(list(window), limit)
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
            with TIMINGS.timed("queue_done"):
                ride_out(lambda: _in_transaction(db_task.set_successful, value))
            task_finished.send(sender=backend, task_result=db_task.task_result)
        except DatabaseAway as error:  # past FORGE_DB_OUTAGE_SECONDS: the worker stops
            logger.error("task %s left running: %s", db_task.id, error)
            self._gave_up = error
            self.stop()
        except BaseException as error:  # a slot survives whatever its task raised
            logger.exception("task %s failed", db_task.id)
            try:
                ride_out(functools.partial(_in_transaction, db_task.set_failed, error))
            except Exception:
                logger.exception("could not record the failure of task %s", db_task.id)
        finally:
            close_old_connections()
            with self._state:
                self._busy -= 1
                self._ran += 1
                self._state.notify_all()


def _in_transaction(write: Callable[[Any], None], value: Any) -> None:
    # In a transaction, like every write of the slots: on SQLite it then queues on the
    # process's writer lock (forge_web.sqlite), not in the busy handler.
    with transaction.atomic():
        write(value)


def _connect() -> None:
    """Open the slot's connection as the worker starts: a wide run's first steps then
    do not wait for PostgreSQL to start a backend for each of 32 slots at once (0.2 s on
    the 2-core machine of issue 13). One that fails now is opened again by the first
    task (and SQLite opens one per task anyway)."""
    try:
        connection.ensure_connection()
    except DatabaseError as error:
        # The database away or full is logged once for the process, not once per slot.
        if not note_database_failure(error):
            logger.warning("a slot could not connect to the database yet", exc_info=True)


def spread(tasks: list[DBTaskResult], limit: int) -> list[DBTaskResult]:
    """Up to ``limit`` of ``tasks`` (in the queue's order), a step of each run before a
    second step of any, among tasks of equal priority.

    Taken in queue order, a worker's slots all took steps of the oldest run: they then
    waited on that run's lock in turn while other runs' steps waited in the queue. A run's
    steps still go in their order, and a higher priority still goes first."""
    taken: dict[object, int] = {}
    ranked = []
    for position, task in enumerate(tasks):
        run = _run_of(task)
        turn = taken[run] = taken.get(run, -1) + 1
        ranked.append((-task.priority, turn, position))
    ranked.sort()
    return [tasks[position] for _, _, position in ranked[:limit]]


def _run_of(task: DBTaskResult) -> object:
    """The run a ``run_step`` task works on; any other task is its own."""
    if task.task_path == run_step.module_path:
        args = task.args_kwargs.get("args") or [None]
        return ("run", args[0])
    return task.pk
