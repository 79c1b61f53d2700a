"""Slots of one worker that decide for the same run at once take its lock once between them.

Every decision of a run waits for the run's lock (``runs.engine.locked_run``), so a wide
run's steps are recorded one transaction after another: a lock, the decision, a round
trip of writes and a commit each. A slot that wants the lock of a run for which another
slot of this process is already waiting leaves its decision with that slot and waits: the
one that gets the lock makes every decision left with it by then, in the order they came,
in its transaction (one lock, one round trip of writes, one commit for them all), and
hands each slot its outcome. Under no contention nothing is left with anyone, and each
decision takes the lock alone as before.

The decisions of one transaction stand or fall together: if it fails, each is made again
in a transaction of its own, so that one slot's stale result or failed claim never drops
another's, and each slot sees its own decision's error as it would have alone.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from runs.engine import LockedRun, locked_run
from runs.timings import TIMINGS

__all__ = ["decide"]


@dataclass(eq=False)
class _Turn[T]:
    """A decision waiting for its run's lock, and, once made, its outcome."""

    make: Callable[[LockedRun], T]
    done: threading.Event = field(default_factory=threading.Event)
    outcome: T | None = None
    alone: bool = False  # the shared transaction failed: make it again in one of its own


_waiting: dict[int, list[_Turn]] = {}  # per run: decisions left with a slot on its way
_guard = threading.Lock()


def decide[T](run_id: int, make: Callable[[LockedRun], T]) -> T:
    """``make(locked)`` under the lock of run ``run_id``, in a transaction it may share
    with other slots' decisions for that run; its outcome (or its error)."""
    turn: _Turn[T] = _Turn(make)
    with _guard:
        waiting = _waiting.get(run_id)
        if waiting is None:
            _waiting[run_id] = [turn]
        else:
            waiting.append(turn)
    if waiting is not None:
        with TIMINGS.timed("shared_wait"):
            turn.done.wait()
        if turn.alone:
            return _alone(run_id, make)
        return turn.outcome  # type: ignore[return-value]
    taken: list[_Turn] = []

    def take() -> list[_Turn]:
        with _guard:
            taken.extend(_waiting.pop(run_id))
        return taken

    try:
        with locked_run(run_id) as locked:
            for each in take():
                each.outcome = each.make(locked)
    except BaseException:
        if not taken:  # failed before the lock: the decisions left meanwhile
            take()
        others = [each for each in taken if each is not turn]
        for each in others:
            each.alone = True
            each.done.set()
        if not others:
            raise
        return _alone(run_id, make)
    for each in taken:
        each.done.set()
    return turn.outcome  # type: ignore[return-value]


def _alone[T](run_id: int, make: Callable[[LockedRun], T]) -> T:
    with locked_run(run_id) as locked:
        return make(locked)
