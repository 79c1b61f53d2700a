"""Database work for asynchronous code, on threads that keep their connection.

Channels' ``database_sync_to_async`` runs every call on one shared thread and opens and
closes a database connection around each (SQLite keeps none between requests): right for
a request, ruinous for a crowd of websockets, where each connection's authentication and
each run feed's poll would queue behind the others and pay for a new connection. A
``DatabaseThreads`` pool runs calls on threads of its own whose connections stay open; a
call that meets a database error closes its thread's connection, so the next one starts
afresh (a restarted database server).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from django.db import DatabaseError, connection

__all__ = ["DatabaseThreads"]


class DatabaseThreads:
    def __init__(self, name: str, threads: int = 1) -> None:
        self._executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix=name)

    async def run[T](self, function: Callable[..., T], *args: Any) -> T:
        """``function(*args)`` on one of the pool's threads, awaited."""
        call = functools.partial(_keeping_connection, function, *args)
        return await asyncio.get_running_loop().run_in_executor(self._executor, call)


def _keeping_connection[T](function: Callable[..., T], *args: Any) -> T:
    try:
        return function(*args)
    except DatabaseError:
        connection.close()
        raise
