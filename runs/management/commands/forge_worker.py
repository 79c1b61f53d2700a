"""A Forge worker: up to ``FORGE_WORKER_CONCURRENCY`` steps at once from the task queue
(``runs.slots``), plus a thread that hands steps whose lease expired (their worker died)
back to the Scheduler."""

from __future__ import annotations

import logging
import os
import signal
import threading
from typing import Any

from django.conf import settings
from django.core.management.base import CommandError
from django.db import close_old_connections, connection
from django.utils.autoreload import DJANGO_AUTORELOAD_ENV, run_with_reloader
from django_tasks_db.management.commands import db_worker

from plans.compilation import tools
from runs.slots import SlotWorker
from runs.timings import TIMINGS
from runs.worker import WORKER_ID, lease_seconds, reap_expired_leases

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
        # Start the MCP servers and list their tools now, outside any transaction, rather
        # than under the first run's lock (servers that do not answer are reported).
        for server in tools().registry.unavailable.items():
            logger.warning("MCP server %r is not available: %s", *server)
        TIMINGS.enabled = options["timings"]
        if TIMINGS.enabled and hasattr(signal, "SIGUSR1"):
            # SIGUSR1 logs what was measured since the last report (bench.scale_out).
            signal.signal(signal.SIGUSR1, lambda *_: _report_timings(worker))
        worker = SlotWorker(
            concurrency=options["concurrency"] or settings.FORGE_WORKER_CONCURRENCY,
            worker_id=f"{WORKER_ID}:{options['worker_id'][:8]}",
            interval=options["interval"],
            queue_names=tuple(options["queue_name"].split(",")),
            backend_name=options["backend_name"],
            batch=options["batch"],
        )
        stop = threading.Event()
        reaper = threading.Thread(
            target=_reap_forever, args=(stop,), daemon=True, name="forge-lease-reaper"
        )
        reaper.start()
        try:
            if options["reload"] and not options["batch"]:
                if os.environ.get(DJANGO_AUTORELOAD_ENV) == "true":  # the reloaded child
                    worker.configure_signals()
                run_with_reloader(worker.run)
            else:
                worker.configure_signals()
                worker.run()
        finally:
            stop.set()
            if TIMINGS.enabled:
                _report_timings(worker)


def _report_timings(worker: SlotWorker) -> None:
    logger.warning("forge-timings ran=%d %s", worker.ran, TIMINGS.report())


def _reap_forever(stop: threading.Event) -> None:
    interval = max(0.5, lease_seconds() / 3)
    try:
        while not stop.wait(interval):
            close_old_connections()
            try:
                reaped = reap_expired_leases()
            except Exception:
                logger.exception("reaping expired leases failed; trying again")
                continue
            if reaped:
                logger.warning("took over %d step(s) whose worker stopped answering", reaped)
    finally:
        connection.close()
