"""How the clients wait for a decision: poll, backing off, until a deadline.

Polling starts quickly, since a reviewer may already be looking, and backs off to one
request every few seconds, so a long wait costs the server little; the last sleep is cut
to the deadline and a final look is taken there, so a decision made just before it is
never missed.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator

from forge.backoff import Backoff

__all__ = ["delays", "wait_bound"]

FIRST_DELAY_S = 0.5
MAX_DELAY_S = 5.0


def delays(first: float = FIRST_DELAY_S, ceiling: float = MAX_DELAY_S) -> Iterator[float]:
    """0.5, 1, 2, 4, 5, 5, ... seconds: doubling up to ``ceiling``. No jitter: a person's
    client waiting on a decision is no crowd, and its looks stay predictable."""
    backoff = Backoff(first_s=first, cap_s=ceiling, jitter=0)
    return (backoff.delay(look) for look in itertools.count(1))


def wait_bound(timeout_s: float) -> float:
    """``timeout_s`` if it is a finite number of seconds, zero or more; else ValueError.
    Zero looks once and returns."""
    if not math.isfinite(timeout_s) or timeout_s < 0:
        raise ValueError(f"timeout_s must be a finite number of seconds >= 0, got {timeout_s}")
    return float(timeout_s)
