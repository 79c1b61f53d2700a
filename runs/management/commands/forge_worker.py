"""A Forge worker: up to ``FORGE_WORKER_CONCURRENCY`` steps at once from the task queue
(``runs.slots``), plus a housekeeping thread that hands steps whose lease expired (their
worker died) back to the Scheduler and anchors the audit chain's head when its newest
rows have waited ``FORGE_AUDIT_ANCHOR_SECONDS`` (``audit.services.anchor_if_due``), so
that a system gone quiet anchors its last rows too.

A database outage is ridden out and logged once (``accounts.outages``); the reaper waits
a lease's length after it ends (``runs.worker.may_reap``). One longer than
``FORGE_DB_OUTAGE_SECONDS`` stops the worker with one line and exit status 1. On
PostgreSQL a worker whose slots cannot fit in the server's free connections is refused
at start with one line and exit status 2 (``runs.capacity``)."""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from typing import Any

from django.conf import settings
from django.core.management.base import CommandError
from django.db import close_old_connections, connection
from django.utils.autoreload import DJANGO_AUTORELOAD_ENV, run_with_reloader
from django_tasks_db.management.commands import db_worker

from accounts.outages import DatabaseAway, note_database_failure
from audit import services as audit_services
from audit.services import ANCHOR_CHECK_SECONDS
from plans.compilation import tools
from runs.capacity import startup_refusal
from runs.slots import SlotWorker
from runs.timings import TIMINGS
from runs.worker import WORKER_ID, lease_seconds, may_reap, reap_expired_leases

logger = logging.getLogger(__name__)


def _concurrency(value: str) -> int:
    number = int(value)
    if number < 1:
        raise ValueError("at least 1")
    return number


class Command(db_worker.Command):
    help = "Run Forge's steps from the task queue and recover steps of dead workers."

    def add_arguments(self, parser: Any) -> None:
        super().add_arguments(parser)
        parser.add_argument(
            "--concurrency",
            type=_concurrency,
            default=None,
            help="steps run at once (default: FORGE_WORKER_CONCURRENCY, "
            f"{settings.FORGE_WORKER_CONCURRENCY})",
        )
        parser.add_argument(
            "--timings",
            action="store_true",
            help="measure where the time goes and log it when the worker stops",
        )
        parser.set_defaults(interval=0.2)

    def handle(self, *args: Any, **options: Any) -> None:
        self.configure_logging(options["verbosity"])
        if options["exclude_queues"]:
            raise CommandError("Forge's worker takes --queue-name only")
        concurrency = options["concurrency"] or settings.FORGE_WORKER_CONCURRENCY
        # Refused in one line (exit status 2) before any slot connects, rather than
        # dying on "too many clients" once they do (runs.capacity).
        if (refused := startup_refusal(concurrency)) is not None:
            raise CommandError(refused, returncode=2)
        # Start the MCP servers and list their tools now, outside any transaction, rather
        # than under the first run's lock (servers that do not answer are reported).
        for server in tools().registry.unavailable.items():
            logger.warning("MCP server %r is not available: %s", *server)
        TIMINGS.enabled = options["timings"]
        if TIMINGS.enabled and hasattr(signal, "SIGUSR1"):
            # SIGUSR1 logs what was measured since the last report (bench.scale_out).
            signal.signal(signal.SIGUSR1, lambda *_: _report_timings(worker))
        worker = SlotWorker(
            concurrency=concurrency,
            worker_id=f"{WORKER_ID}:{options['worker_id'][:8]}",
            interval=options["interval"],
            queue_names=tuple(options["queue_name"].split(",")),
            backend_name=options["backend_name"],
            batch=options["batch"],
        )
        stop = threading.Event()
        housekeeper = threading.Thread(
            target=_housekeep_forever, args=(stop,), daemon=True, name="forge-housekeeper"
        )
        housekeeper.start()
        try:
            if options["reload"] and not options["batch"]:
                if os.environ.get(DJANGO_AUTORELOAD_ENV) == "true":  # the reloaded child
                    worker.configure_signals()
                run_with_reloader(worker.run)
            else:
                worker.configure_signals()
                worker.run()
        except DatabaseAway as error:
            # One line, no traceback; its supervisor (forge_serve, systemd) starts it again.
            raise CommandError(f"the worker stops: {error}") from None
        finally:
            stop.set()
            if TIMINGS.enabled:
                _report_timings(worker)


def _report_timings(worker: SlotWorker) -> None:
    logger.warning("forge-timings ran=%d %s", worker.ran, TIMINGS.report())


def _housekeep_forever(stop: threading.Event) -> None:
    reap_every = max(0.5, lease_seconds() / 3)
    reap_at = time.monotonic() + reap_every
    try:
        while not stop.wait(ANCHOR_CHECK_SECONDS):
            close_old_connections()
            try:
                audit_services.anchor_if_due()
            except Exception as error:
                if not note_database_failure(error):  # an outage is logged once
                    logger.exception("audit anchor by time not written")
                continue
            if time.monotonic() < reap_at or not may_reap():
                continue
            reap_at = time.monotonic() + reap_every
            try:
                reaped = reap_expired_leases()
            except Exception as error:
                if not note_database_failure(error):
                    logger.exception("reaping expired leases failed; trying again")
                continue
            if reaped:
                logger.warning("took over %d step(s) whose worker stopped answering", reaped)
    finally:
        connection.close()
