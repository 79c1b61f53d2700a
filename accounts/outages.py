"""The database and Redis going away, for every app: which errors mean it, and riding it out.

The one place that says which errors mean "the database is unavailable" (a refused or
lost connection, a server shutting down or starting up, too many clients, a connection
pool that timed out, SQLite's lock held too long) as opposed to a bug in a query:
``database_unavailable``. Each process keeps one ``forge.outage.Outage`` per service
(``DATABASE``, ``REDIS``), so an outage is logged once when it starts and once when it
ends, whichever thread meets it; a new database connection (``connection_created``)
ends the database's. ``ride_out`` and ``Reconnects`` are how the worker's threads wait
for the database: a new connection after a capped, jittered backoff, for at most
``FORGE_DB_OUTAGE_SECONDS`` of outage.

It lives in ``accounts``, the lowest Django floor (as ``accounts.offloop`` does), so
that every app above may use it.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psycopg
from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError, connection

from forge.backoff import Backoff
from forge.outage import Outage

__all__ = [
    "DATABASE",
    "RECONNECT",
    "REDIS",
    "DatabaseAway",
    "Reconnects",
    "database_unavailable",
    "describe_failure",
    "note_database_failure",
    "note_outage",
    "ride_out",
    "too_many_clients",
]

logger = logging.getLogger("forge.outages")

DATABASE = Outage("the database", logger)
REDIS = Outage("Redis", logger)

# A thread's reconnects: 50 ms after the first failure, doubling, at most 2 s apart (a
# refused connection costs nothing; a restarted server is used within 2 s of its return).
RECONNECT = Backoff(first_s=0.05, cap_s=2.0, jitter=0.5)

# PostgreSQL's SQLSTATE classes and codes of a server that is away or cannot take us now:
# connection exceptions (08), insufficient resources (53: too many clients, out of memory
# or disk), and operator intervention (57P: shutting down, crashed, starting up, the
# database dropped). A client-side failure (refused, lost, a pool timeout) has none.
_UNAVAILABLE_SQLSTATES = ("08", "53", "57P")
TOO_MANY_CONNECTIONS = "53300"
# SQLite's: the lock held past the busy timeout, the file unreadable.
_UNAVAILABLE_SQLITE = {"SQLITE_BUSY", "SQLITE_LOCKED", "SQLITE_CANTOPEN", "SQLITE_IOERR"}


def database_unavailable(error: BaseException) -> bool:
    """Whether ``error`` (Django's, or the driver's it wraps) means the database cannot be
    reached or cannot serve us now, rather than that a statement was wrong."""
    for each in (error, error.__cause__):
        if isinstance(each, (InterfaceError, psycopg.InterfaceError)):
            return True  # the connection is closed or broken
        if isinstance(each, psycopg.OperationalError):
            state = each.sqlstate
            return state is None or state.startswith(_UNAVAILABLE_SQLSTATES)
        if isinstance(each, sqlite3.OperationalError):
            return getattr(each, "sqlite_errorname", "") in _UNAVAILABLE_SQLITE or (
                "database is locked" in str(each)
            )
    # Django's own OperationalError without a driver's cause (e.g. its pool gave up).
    return isinstance(error, OperationalError) and error.__cause__ is None


def too_many_clients(error: BaseException) -> bool:
    """Whether ``error`` is the server refusing a connection because ``max_connections``
    (or a role's or database's limit) is reached: SQLSTATE 53300, which libpq does not
    report for a connection it could not open, so its message is read too."""
    for each in (error, error.__cause__):
        if isinstance(each, psycopg.OperationalError) and (
            each.sqlstate == TOO_MANY_CONNECTIONS or "too many clients" in str(each)
        ):
            return True
    return False


def describe_failure(error: BaseException) -> BaseException | str:
    """What the outage's one log line says about ``error``: a full server is named as
    such, with what every thread does about it."""
    if too_many_clients(error):
        return (
            "too many clients: the server's max_connections is reached; backing off "
            "and connecting again"
        )
    return error


class _FullServerNotice:
    """Says once per outage that the server is full, even when the outage began as
    something else (connections cut, then refused for want of room)."""

    def __init__(self) -> None:
        # One decision at a time: threads that meet a full server in the same instant
        # (the claim loop and a slot) must not both find the outage new, or both find
        # the server's fullness unsaid, and log it twice.
        self._lock = threading.Lock()
        self._said = False

    def note(self, error: BaseException) -> None:
        described = describe_failure(error)
        full = too_many_clients(error)
        with self._lock:
            if DATABASE.failed(described):  # a new outage, logged by DATABASE
                self._said = full
                return
            if not full or self._said:
                return
            self._said = True
        logger.warning("%s is unavailable (%s)", DATABASE.service, described)


_FULL_SERVER = _FullServerNotice()


def note_outage(error: BaseException) -> None:
    """Note ``error``, one that means the database is unavailable, as this process's
    outage: logged when it starts it, and a full server (too many clients) said once
    per outage whatever began it, since that one is the operator's to fix."""
    _FULL_SERVER.note(error)


def note_database_failure(error: BaseException) -> bool:
    """If ``error`` means the database is unavailable: note it (logged once per outage),
    close this thread's connection so that the next query connects anew, and say True."""
    if not database_unavailable(error):
        return False
    note_outage(error)
    if not connection.in_atomic_block:
        with contextlib.suppress(DatabaseError):
            connection.close()
    return True


def database_connected(**_: Any) -> None:
    """``connection_created``'s receiver: a connection made means the database is back."""
    DATABASE.recovered()


class DatabaseAway(RuntimeError):
    """The database stayed away longer than ``FORGE_DB_OUTAGE_SECONDS``."""


@dataclass
class Reconnects:
    """One thread's way through a database outage: how long to wait before trying again,
    and when to give up."""

    clock: Callable[[], float] = time.monotonic
    _since: float | None = None
    _retries: int = 0

    def failed(self, error: BaseException) -> float:
        """Seconds to wait before trying again after ``error``. Raises ``error`` itself
        when it is no outage, and ``DatabaseAway`` once the outage has lasted
        ``FORGE_DB_OUTAGE_SECONDS``."""
        if not note_database_failure(error):
            raise error
        now = self.clock()
        if self._since is None:
            self._since = now
        limit = settings.FORGE_DB_OUTAGE_SECONDS
        if now - self._since >= limit:
            raise DatabaseAway(
                f"the database has been unavailable for {now - self._since:.0f} s, "
                f"longer than FORGE_DB_OUTAGE_SECONDS ({limit} s)"
            ) from error
        self._retries += 1
        return RECONNECT.delay(self._retries)

    def succeeded(self) -> None:
        self._since = None
        self._retries = 0


def ride_out[T](action: Callable[[], T], *, wait: Callable[[float], object] = time.sleep) -> T:
    """``action()``, called again while the database is unavailable (``Reconnects``); any
    other error is raised at once. For work that is safe to do again when its
    transaction failed: a read, or a transaction whose checks refuse a second time."""
    reconnects = Reconnects()
    while True:
        try:
            return action()
        except Exception as error:
            wait(reconnects.failed(error))
