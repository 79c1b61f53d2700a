"""Helpers the benchmarks share: medians of repeated timings, and a printed table."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence


def median_seconds(action: Callable[[], object], *, repeat: int, warmup: int = 1) -> float:
    for _ in range(warmup):
        action()
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def print_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    for index, row in enumerate(cells):
        print("  ".join(cell.rjust(width) for cell, width in zip(row, widths, strict=True)))
        if index == 0:
            print("  ".join("-" * width for width in widths))
