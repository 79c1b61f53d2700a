"""How long a retry waits: exponential backoff with a cap and jitter, Forge's only one.

Webhook deliveries, steps started again after a lost lease, the live feeds' reconnects
and the clients' polling all take their delays from here, so none of them can overflow
(``30 * 2**(n-1)`` seconds passes ``timedelta``'s range near the 43rd retry) or send a
crowd of retries at the same instant.
"""

from __future__ import annotations

import math
import random as _random
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Backoff"]

# 2**1023 is the largest power of two a float holds: past it the doubling is the cap anyway.
_MAX_DOUBLINGS = 1023


@dataclass(frozen=True)
class Backoff:
    """``first_s`` seconds before the first retry, doubled for each one after, never more
    than ``cap_s``; ``jitter`` (0 to 1) is the share of each delay that may be taken off
    at random, so retries that failed together do not come back together.

    Raises ``ValueError`` for a negative or infinite delay, or a jitter outside 0..1."""

    first_s: float
    cap_s: float
    jitter: float = 0.2

    def __post_init__(self) -> None:
        for name in ("first_s", "cap_s"):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a finite number of seconds >= 0, got {value}")
        if not 0 <= self.jitter <= 1:
            raise ValueError(f"jitter must be between 0 and 1, got {self.jitter}")

    def delay(self, retry: int, *, random: Callable[[], float] = _random.random) -> float:
        """Seconds before retry number ``retry`` (the first retry is 1). ``random`` draws
        from [0, 1); the delay is then in ``((1 - jitter) * d, d]`` for the capped
        doubling ``d``. Raises ``ValueError`` for a retry number below 1."""
        if retry < 1:
            raise ValueError(f"retries are counted from 1, got {retry}")
        # A float product past its range is inf, never an error, and the cap takes it.
        doubled = self.first_s * 2.0 ** min(retry - 1, _MAX_DOUBLINGS)
        capped = min(doubled, self.cap_s)
        return capped * (1 - self.jitter * random()) if self.jitter else capped
