"""Django's SQLite backend, with one writer at a time per process queued in Python.

SQLite has one write lock per database. Between processes, a writer that finds it taken
waits in SQLite's busy handler, which sleeps in growing steps (1, 2, 5, 10 ... 100 ms)
between tries. Between the threads of one process (a worker's slots, the web server's
request threads) that is needless: the transaction that holds the lock is in this
process, and a Python lock hands over the moment it ends. So a transaction here (every
``atomic`` block: IMMEDIATE, the write lock taken at BEGIN) first takes this process's
writer lock, and gives it back when it commits or rolls back; another process's writer
still queues in the busy handler. Waiting longer than the busy timeout fails as SQLite
would ("database is locked"). In-memory databases (tests) are left as they are.
"""

from __future__ import annotations

import threading
from typing import Any

from django.db import OperationalError
from django.db.backends.sqlite3 import base

_WRITER = threading.Lock()


class DatabaseWrapper(base.DatabaseWrapper):
    _holds_writer = False

    def _start_transaction_under_autocommit(self) -> None:
        queued = not self.is_in_memory_db()
        if queued:
            timeout = float(self.settings_dict.get("OPTIONS", {}).get("timeout", 5))
            if not _WRITER.acquire(timeout=timeout):
                raise OperationalError("database is locked (by this process's other writer)")
            self._holds_writer = True
        try:
            super()._start_transaction_under_autocommit()
        except BaseException:
            self._release_writer()
            raise

    def _commit(self) -> Any:
        try:
            return super()._commit()
        finally:
            self._release_writer()

    def _rollback(self) -> Any:
        try:
            return super()._rollback()
        finally:
            self._release_writer()

    def _close(self) -> Any:
        try:
            return super()._close()
        finally:
            self._release_writer()

    def _release_writer(self) -> None:
        if self._holds_writer:
            self._holds_writer = False
            _WRITER.release()
