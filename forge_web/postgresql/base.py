"""Django's PostgreSQL backend, with a pool checkout that answers at once while the
database is away or full.

psycopg_pool makes its connections in background threads, and a thread that needs one
waits for it up to the pool's timeout (``FORGE_DB_POOL_TIMEOUT``). That is right while
the pool is merely busy, and wrong while the server is down or refuses more clients:
every request would hang for the whole timeout before its 503, and a five-second restart
would leave the web answering nothing for ten. So:

- the pool's connections are opened by ``NotedConnection``, which reports an attempt
  that failed because the database is unavailable as the process's outage
  (``accounts.outages.DATABASE``: logged once, answered 503 with ``Retry-After``);
- a thread waits for its connection in short slices (``Checkout``) and gives up as soon
  as that outage is known. While it lasts a thread takes a connection the pool has
  ready, or else asks the server itself (one thread at a time): a refusal is raised at
  once (503), and a server that answers again gets a connection from the pool as usual,
  without waiting out the pool's backoff between its own attempts. The first connection
  handed out ends the outage (``connection_created``, as without a pool).

Without ``OPTIONS["pool"]`` it is Django's backend unchanged.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Self

import psycopg
from django.db.backends.postgresql import base
from psycopg_pool import ConnectionPool, PoolTimeout

from accounts.outages import DATABASE, database_unavailable, note_outage

__all__ = ["Checkout", "DatabaseWrapper", "NotedConnection"]

# A waiting thread looks at the outage state this often: a refused server turns into 503s
# within a quarter of a second, not at the end of the pool's timeout.
SLICE_S = 0.25
# While the database is known away, how long a thread waits for a connection the pool
# has ready (one being given back) before it asks the server itself.
READY_S = 0.01
# One thread at a time asks a server known away whether it is back.
_ASKING = threading.Lock()


class NotedConnection(psycopg.Connection[Any]):
    """A pool's connection whose failure to connect is noted as a database outage."""

    @classmethod
    def connect(cls, conninfo: str = "", **kwargs: Any) -> Self:
        try:
            return super().connect(conninfo, **kwargs)
        except psycopg.Error as error:
            if database_unavailable(error):
                note_outage(error)  # logged once per outage, whichever thread
            raise


class Checkout:
    """``pool`` as Django's backend uses it, its ``getconn`` aware of outages."""

    def __init__(self, pool: ConnectionPool[Any]) -> None:
        self._pool = pool

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pool, name)

    def getconn(self, timeout: float | None = None) -> Any:
        """A connection within ``timeout`` (the pool's), or ``PoolTimeout`` sooner when
        the database is unavailable."""
        pool = self._pool
        wait = pool.timeout if timeout is None else timeout
        deadline = time.monotonic() + wait
        while True:
            if DATABASE.down:
                return self._while_away(deadline)
            left = deadline - time.monotonic()
            if left <= 0:
                exhausted = PoolTimeout(
                    f"no connection free in the pool within {wait:g} s "
                    f"(all {pool.max_size} in use: FORGE_DB_POOL_MAX, FORGE_DB_POOL_TIMEOUT)"
                )
                # Noted here, whoever catches it: a page's handler500 is handed no
                # exception when the request was served asynchronously, and asks.
                note_outage(exhausted)
                raise exhausted
            try:
                # A slice, then the outage state again: a waiting thread cannot be woken
                # by the pool's failed attempt, so it looks. Waiting again puts it at the
                # end of the pool's queue; under load a slice is mostly enough.
                return pool.getconn(timeout=min(SLICE_S, left))
            except PoolTimeout:
                continue

    def _while_away(self, deadline: float) -> Any:
        """A connection while the database is known away or full: one the pool has
        ready; else, if the server answers again, one the pool makes as usual; else the
        server's refusal, at once."""
        pool = self._pool
        try:
            return pool.getconn(timeout=READY_S)
        except PoolTimeout:
            pass
        # The pool's own attempts back off (up to its reconnect_timeout): asking the server
        # directly tells a restarted one from one still away without waiting for them. A
        # refused connection costs a millisecond; one thread asks, the others are answered.
        if not _ASKING.acquire(blocking=False):
            raise PoolTimeout("the database is unavailable (another thread is asking it)")
        try:
            kwargs = pool.kwargs if isinstance(pool.kwargs, dict) else {}
            psycopg.connect(pool.conninfo, **{**kwargs, "connect_timeout": 2}).close()
        finally:
            _ASKING.release()
        return pool.getconn(timeout=max(READY_S, deadline - time.monotonic()))


class DatabaseWrapper(base.DatabaseWrapper):
    @property
    def pool(self) -> Checkout | None:  # type: ignore[override]
        options = self.settings_dict["OPTIONS"].get("pool")
        if isinstance(options, dict):
            options.setdefault("connection_class", NotedConnection)
        pool = super().pool
        return None if pool is None else Checkout(pool)
