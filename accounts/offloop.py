"""Database work for asynchronous code, on threads that keep their connection.

Channels' ``database_sync_to_async`` runs every call on one shared thread and opens and
closes a database connection around each (SQLite keeps none between requests): right for
a request, ruinous for a crowd of websockets, where each connection's authentication and
each run feed's poll would queue behind the others and pay for a new connection. A
``DatabaseThreads`` pool runs calls on threads of its own whose connections stay open; a
call that meets a database error closes its thread's connection, so the next one starts
afresh (a restarted database server). ``close_kept_connections`` closes them all, each
on its own thread (a test session, before its test database is dropped: PostgreSQL
drops no database someone is connected to).
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from django.db import DatabaseError, connection

__all__ = ["DatabaseThreads", "close_kept_connections"]


class DatabaseThreads:
    def __init__(self, name: str, threads: int = 1) -> None:
        self._threads = threads
        self._executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix=name)
        _MADE.append(self)

    async def run[T](self, function: Callable[..., T], *args: Any) -> T:
        """``function(*args)`` on one of the pool's threads, awaited."""
        call = functools.partial(_keeping_connection, function, *args)
        return await asyncio.get_running_loop().run_in_executor(self._executor, call)

    def close_connections(self) -> None:
        """Close the connection each of the pool's threads keeps, on that thread."""
        # Each close waits for the others: no thread can take two, so each takes one.
        together = threading.Barrier(self._threads)

        def close() -> None:
            connection.close()
            together.wait(timeout=10)

        for closing in [self._executor.submit(close) for _ in range(self._threads)]:
            closing.result()


_MADE: list[DatabaseThreads] = []


def close_kept_connections() -> None:
    """Close the connections every ``DatabaseThreads`` of this process keeps."""
    for made in _MADE:
        made.close_connections()


def _keeping_connection[T](function: Callable[..., T], *args: Any) -> T:
    try:
        return function(*args)
    except DatabaseError:
        connection.close()
        raise
