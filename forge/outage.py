"""A service that went away (the database, Redis, an MCP server) as a state, not an error.

Every thread of a process that meets the service failing reports it here; the first
report of an outage logs one line (what failed, without a traceback), every later one is
counted silently, and the first success after it logs one line with the outage's length.
A five-second database restart under a busy web process and eight worker slots is then
two log lines, not a traceback per request and per step. Who retries, and how long they
wait, is the caller's (``forge.backoff``); ``retry_after`` is what to tell clients.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable

from forge.backoff import Backoff

__all__ = ["Outage"]

# Clients are told to come back after 1 s at first, later the longer it lasts, at most
# 30 s, and not all at the same second.
_RETRY_AFTER = Backoff(first_s=1.0, cap_s=30.0, jitter=0.5)


class Outage:
    """Whether ``service`` is away, as this process saw it last, logged on ``log``."""

    def __init__(
        self, service: str, log: logging.Logger, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.service = service
        self._log = log
        self._clock = clock
        self._lock = threading.Lock()
        self._down_since: float | None = None
        self._up_since = -math.inf
        self.failures = 0  # reports during the current (or the last) outage

    @property
    def down(self) -> bool:
        return self._down_since is not None

    def failed(self, error: BaseException | str) -> bool:
        """Note that the service failed us; True when this starts an outage (and logged
        it)."""
        with self._lock:
            self.failures += 1
            if self._down_since is not None:
                return False
            self._down_since = self._clock()
            self.failures = 1
        self._log.warning("%s is unavailable (%s)", self.service, _summary(error))
        return True

    def recovered(self) -> float | None:
        """Note that the service answered; the outage's length in seconds when this ends
        one (and logged it), else None."""
        if not self.down:  # the common case, without the lock
            return None
        with self._lock:
            since, self._down_since = self._down_since, None
            if since is None:
                return None
            now = self._up_since = self._clock()
        length = now - since
        self._log.warning("%s is back after %.1f s", self.service, length)
        return length

    def seconds_down(self) -> float:
        """How long the current outage has lasted; 0 while the service is up."""
        since = self._down_since
        return 0.0 if since is None else self._clock() - since

    def seconds_up(self) -> float:
        """How long since the last outage ended (infinite if there was none); 0 while
        the service is away."""
        return 0.0 if self.down else self._clock() - self._up_since

    def retry_after(self) -> int:
        """Whole seconds a client should wait before asking again: about a second at
        first, doubling with the outage's length, at most 30, with jitter."""
        retry = 1 + int(math.log2(1 + self.seconds_down()))
        return max(1, math.ceil(_RETRY_AFTER.delay(retry)))


def _summary(error: BaseException | str) -> str:
    """The error's first line, with its class: enough to tell a refused connection from
    a server shutting down, without the traceback."""
    if isinstance(error, str):
        return error
    text = str(error).strip().splitlines()
    first = text[0].strip() if text else ""
    return f"{type(error).__name__}: {first}" if first else type(error).__name__
