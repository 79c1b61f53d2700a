"""A worker's share of PostgreSQL's connections: what it needs, what the server has left.

A worker holds at most a connection per slot plus ``OWN_CONNECTIONS`` (its claim loop,
its housekeeper, its heartbeat), and its connection pool is sized to exactly that
(``fit_pool``), so that a slot never waits for a connection and the worker never holds
more. Before it starts, ``forge_worker`` compares that with what the server has left:
``max_connections`` less ``superuser_reserved_connections`` (and PostgreSQL 16's
``reserved_connections``) less the client connections already open. A worker that
cannot fit is refused with one line naming ``FORGE_WORKER_CONCURRENCY`` and
``max_connections``, instead of dying on "too many clients" with a traceback once its
slots connect (issue 27: a worker of 400 slots on a server of 100 connections).

The check is a snapshot: web processes and other workers may take connections after it.
A worker that meets "too many clients" later backs off like any database outage
(``accounts.outages``), and says so once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg
from django.conf import settings
from django.db import connection

from accounts.outages import database_unavailable, note_outage, too_many_clients

__all__ = [
    "OWN_CONNECTIONS",
    "ServerConnections",
    "fit_pool",
    "read_server",
    "refusal",
    "startup_refusal",
]

# The claim loop (the main thread), the housekeeper (reaper, audit anchors), the heartbeat.
OWN_CONNECTIONS = 3

_SERVER_CONNECTIONS = """
SELECT current_setting('max_connections')::int,
       current_setting('superuser_reserved_connections')::int,
       coalesce(current_setting('reserved_connections', true), '0')::int,
       (SELECT count(*) FROM pg_stat_activity
         WHERE backend_type = 'client backend' AND pid <> pg_backend_pid())
"""


@dataclass(frozen=True)
class ServerConnections:
    """A PostgreSQL server's connections as one session saw them (not counting itself)."""

    max_connections: int
    reserved: int  # superuser_reserved_connections + reserved_connections
    in_use: int

    @property
    def free(self) -> int:
        """Connections an ordinary client may still open."""
        return max(0, self.max_connections - self.reserved - self.in_use)


def needs(slots: int) -> int:
    """Connections a worker of ``slots`` slots holds at most."""
    return slots + OWN_CONNECTIONS


def read_server(cursor: Any) -> ServerConnections:
    """The server's connections, read on ``cursor`` (a DB-API cursor)."""
    cursor.execute(_SERVER_CONNECTIONS)
    max_connections, superuser_reserved, reserved, in_use = cursor.fetchone()
    return ServerConnections(max_connections, superuser_reserved + reserved, in_use)


def refusal(slots: int, server: ServerConnections) -> str | None:
    """Why a worker of ``slots`` slots cannot start on ``server``, in one line; None when
    it fits."""
    wanted = needs(slots)
    if wanted <= server.free:
        return None
    room = max(0, server.free - OWN_CONNECTIONS)
    return (
        f"the worker does not fit in the database's connections: "
        f"FORGE_WORKER_CONCURRENCY={slots} slots need {wanted} connections "
        f"({slots} + {OWN_CONNECTIONS} of its own), but max_connections={server.max_connections} "
        f"less {server.reserved} reserved and {server.in_use} in use leaves {server.free}; "
        f"run at most {room} slots (FORGE_WORKER_CONCURRENCY or --concurrency) or raise "
        f"max_connections"
    )


def startup_refusal(slots: int) -> str | None:
    """Why a worker of ``slots`` slots cannot start on this process's database, in one
    line; None when it fits, and on SQLite. A server that cannot be reached now is no
    refusal: the worker rides the outage out as it would later (noted, logged once)."""
    if connection.vendor != "postgresql":
        return None
    params = {"connect_timeout": 10, **connection.get_connection_params()}
    try:
        # A connection of its own, outside the pool, closed before the slots start.
        with psycopg.connect(**params) as conn, conn.cursor() as cursor:
            server = read_server(cursor)
    except psycopg.Error as error:
        if too_many_clients(error):
            return (
                f"the worker does not fit in the database's connections: the server "
                f"already refuses new clients (max_connections reached), and "
                f"FORGE_WORKER_CONCURRENCY={slots} slots need {needs(slots)} connections; "
                f"lower FORGE_WORKER_CONCURRENCY (or --concurrency) or raise max_connections"
            )
        if not database_unavailable(error):
            raise
        note_outage(error)
        return None
    return refusal(slots, server)


def fit_pool(slots: int) -> None:
    """Size this process's connection pool, if it has one, to a worker of ``slots``:
    ``needs(slots)`` at most, ``FORGE_DB_POOL_MIN`` of them kept open."""
    options = settings.DATABASES["default"].get("OPTIONS", {}).get("pool")
    if not isinstance(options, dict):
        return
    most = needs(slots)
    least = min(settings.FORGE_DB_POOL_MIN, most)
    options.update(min_size=least, max_size=most)
    pool = connection.pool  # made now with that size, unless it was made already
    if pool is None:
        return
    # Connections this process's other threads hold already (none in a worker process
    # at start; a test process's websocket threads keep theirs) are not the slots': they
    # come on top, so that no slot waits for one. What the worker's own threads hold is
    # still at most needs(slots), a connection per thread.
    stats = pool.get_stats()
    held = max(0, stats.get("pool_size", 0) - stats.get("pool_available", 0))
    if (pool.min_size, pool.max_size) != (least, most + held):
        pool.resize(least, most + held)
