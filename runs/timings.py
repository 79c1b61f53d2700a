"""Where a worker's time goes, measured when asked (``forge_worker --timings``): how
long its transactions wait for a run's lock and hold it (catching up with other
workers' events, deciding, writing), how long a slot waits for another slot's
transaction that makes its decision too (``shared_wait``, ``runs.decisions``), how long
claiming from the queue and recording task results take, and how long steps run. Off,
each measuring point costs one attribute read; on, two clock reads and a locked
addition. ``bench.scale_out`` reads the report a worker logs when it stops."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["TIMINGS", "Timings"]


class Timings:
    def __init__(self) -> None:
        self.enabled = False
        self._totals: dict[str, float] = {}
        self._counts: dict[str, int] = {}
        self._lock = threading.Lock()

    @contextmanager
    def timed(self, name: str) -> Iterator[None]:
        if not self.enabled:
            yield
            return
        started = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - started)

    def add(self, name: str, seconds: float) -> None:
        with self._lock:
            self._totals[name] = self._totals.get(name, 0.0) + seconds
            self._counts[name] = self._counts.get(name, 0) + 1

    def snapshot(self) -> dict[str, tuple[int, float]]:
        """Per measuring point: how many times, and the total seconds."""
        with self._lock:
            return {name: (self._counts[name], total) for name, total in self._totals.items()}

    def report(self) -> str:
        """One line: ``name=count/total_ms`` for each point, the form the bench parses."""
        return " ".join(
            f"{name}={count}/{total * 1000:.1f}"
            for name, (count, total) in sorted(self.snapshot().items())
        )


TIMINGS = Timings()
