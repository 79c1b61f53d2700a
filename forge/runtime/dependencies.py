"""What a step's dependencies decide, each rule in one place (SPEC sections 2 and 5): when
it may become ready, which steps its failure resets, and which results survive that.

The Scheduler applies them to a run's state, ``forge.workflow`` (the seed's names) to its
executor's results, and the planner evaluation's fidelity score to a run's events; each
passes the statuses and dependents it keeps, so the rules do not depend on who holds the
graph.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable

__all__ = ["preserved_steps", "reset_steps", "unmet_dependencies"]


def unmet_dependencies(depends_on: Iterable[str], status: Callable[[str], str | None]) -> list[str]:
    """The dependencies that have not succeeded, in the order given; a step may become
    ready when there are none. A recorded result is not a success: a failed dependency
    stays unmet, so nothing below a failure runs."""
    return [dep for dep in depends_on if status(dep) != "succeeded"]


def reset_steps(failed_id: str, dependents: Callable[[str], Iterable[str]]) -> set[str]:
    """The failed step and every step that depends on it, directly or transitively: what
    a replan starts over. ``dependents`` gives a step's direct dependents."""
    reset = {failed_id}
    frontier = [failed_id]
    while frontier:
        for child in dependents(frontier.pop()):
            if child not in reset:
                reset.add(child)
                frontier.append(child)
    return reset


def preserved_steps(statuses: Iterable[tuple[str, str]], reset: Container[str]) -> list[str]:
    """The ids of the steps that succeeded outside ``reset``, sorted: the results a replan
    keeps. ``statuses`` are ``(step id, status)`` pairs."""
    return sorted(
        step_id for step_id, status in statuses if status == "succeeded" and step_id not in reset
    )
