"""A Forge worker: django-tasks-db's worker loop, plus a thread that hands steps whose
lease expired (their worker died) back to the Scheduler."""

from __future__ import annotations

import logging
import threading
from typing import Any

from django.db import close_old_connections, connection
from django_tasks_db.management.commands import db_worker

from plans.compilation import tools
from runs.worker import lease_seconds, reap_expired_leases

logger = logging.getLogger(__name__)


class Command(db_worker.Command):
    help = "Run Forge's steps from the task queue and recover steps of dead workers."

    def add_arguments(self, parser: Any) -> None:
        super().add_arguments(parser)
        parser.set_defaults(interval=0.2)

    def handle(self, *args: Any, **options: Any) -> None:
        # Start the MCP servers and list their tools now, outside any transaction, rather
        # than under the first run's lock (servers that do not answer are reported).
        for server in tools().registry.unavailable.items():
            logger.warning("MCP server %r is not available: %s", *server)
        stop = threading.Event()
        reaper = threading.Thread(
            target=_reap_forever, args=(stop,), daemon=True, name="forge-lease-reaper"
        )
        reaper.start()
        try:
            super().handle(*args, **options)
        finally:
            stop.set()


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
