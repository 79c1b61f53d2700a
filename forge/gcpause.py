"""``paused_gc()``: no cyclic garbage collection while a block builds acyclic data.

Reading a large plan makes hundreds of thousands of containers, and every few thousand
the cyclic collector walks the ones alive, more each time: at 100,000 steps the walks
took longer than the parsing (bench/compile.py). Parsed documents and compiled graphs
hold no reference cycles, so nothing is lost by collecting after the block instead;
reference counting frees everything else as usual meanwhile. The collector is turned
back on only if it was on before, so nested and concurrent pauses leave it as it was.

The collector is the interpreter's, shared by every thread: only a command that owns its
process pauses it (``forge.cli``), never library code that a threaded web process or
worker calls.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["paused_gc"]


@contextmanager
def paused_gc() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
