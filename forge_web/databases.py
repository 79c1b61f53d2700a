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

from dataclasses import dataclass
from typing import Any

import dj_database_url

__all__ = ["FORGE_POSTGRES_ENGINE", "PoolSize", "database_from_url"]

SQLITE_ENGINE = "django.db.backends.sqlite3"
FORGE_SQLITE_ENGINE = "forge_web.sqlite"
POSTGRES_ENGINE = "django.db.backends.postgresql"
FORGE_POSTGRES_ENGINE = "forge_web.postgresql"


@dataclass(frozen=True)
class PoolSize:
    """A process's PostgreSQL pool: ``min_size`` connections kept open, at most
    ``max_size``, and how long a thread waits for one before its query fails
    (psycopg_pool's ``PoolTimeout``, which the web answers as 503)."""

    min_size: int
    max_size: int
    timeout_s: float

    def __post_init__(self) -> None:
        if not 0 <= self.min_size <= self.max_size or self.max_size < 1:
            raise ValueError(
                f"a pool needs 0 <= min_size <= max_size and max_size >= 1, "
                f"got {self.min_size} and {self.max_size}"
            )
        if self.timeout_s <= 0:
            raise ValueError(f"a pool's timeout must be positive, got {self.timeout_s}")

    def options(self) -> dict[str, Any]:
        """psycopg_pool's ``ConnectionPool`` arguments, as Django's ``OPTIONS["pool"]``."""
        return {
            "min_size": self.min_size,
            "max_size": self.max_size,
            "timeout": self.timeout_s,
            # A connection attempt the server refused is not retried in the background for
            # minutes (psycopg_pool's default: 300 s, backing off up to a minute between
            # tries, so a restarted server would wait that long to be used): the pool
            # gives up after 1 s and the next thread that needs a connection tries again.
            "reconnect_timeout": 1.0,
        }


def database_from_url(
    url: str,
    *,
    conn_max_age: int = 600,
    health_checks: bool = True,
    busy_timeout: int = 20,
    pool: PoolSize | None = None,
) -> dict[str, Any]:
    """Return the ``DATABASES["default"]`` dictionary for ``url``; on PostgreSQL with a
    connection pool of ``pool``'s size unless it is None."""
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
    elif config["ENGINE"] == POSTGRES_ENGINE and pool is not None:
        config["ENGINE"] = FORGE_POSTGRES_ENGINE
        config["CONN_MAX_AGE"] = 0  # Django refuses persistent connections with a pool
        # With a pool, Django's health checks become the pool's check at each checkout.
        config["CONN_HEALTH_CHECKS"] = health_checks
        config["OPTIONS"] = {**config.get("OPTIONS", {}), "pool": pool.options()}
    else:
        config["CONN_MAX_AGE"] = conn_max_age
        config["CONN_HEALTH_CHECKS"] = health_checks
    return config
