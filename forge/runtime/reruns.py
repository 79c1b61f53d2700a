"""Re-running a run from chosen steps ("run again from here"): which steps a new run of
the same version executes again and which keep the outputs the earlier run recorded.

The rule is resume's (``Scheduler.resume``): a step is kept only when it succeeded and
everything it depends on is kept, so it never runs again and its output is the one its
dependents saw. Here the steps to run again are the chosen ones and their descendants,
plus every other step that did not succeed in the earlier run (with its descendants):
nothing can be kept that was never done. ``plan_rerun`` says so (``unfinished``) rather
than refusing, since that is what a person re-running a run expects.

It refuses a run that may still act (steps running, or a status from which it goes on
by itself) and one with a step that needs reconciling: that step may have had its
side effect, and running it again could repeat it. The new run passes the gate as any
start does (``Scheduler.prepare``); steps that need approval wait for it again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from forge.compiler import ExecutableGraph
from forge.errors import ForgeError
from forge.runtime.state import RunState, StepState
from forge.runtime.status import FINAL_RUN_STATUSES

__all__ = ["Rerun", "RerunRefused", "plan_rerun"]

# A run in these statuses acts no more by itself (needs_replan waits for a person).
_STOPPED = FINAL_RUN_STATUSES | {"needs_replan"}


class RerunRefused(ForgeError, ValueError):
    """A re-run that cannot be made. ``code``: ``no_steps``, ``unknown_step``,
    ``run_in_progress`` or ``needs_reconciliation``; ``steps``: the steps concerned."""

    code = "rerun_refused"

    def __init__(self, message: str, *, code: str, steps: tuple[str, ...] = ()) -> None:
        super().__init__(message, code=code)
        self.steps = steps

    @property
    def details(self) -> dict[str, Any]:
        """What an API answer adds to the message (``forge_web.api``)."""
        return {"steps": list(self.steps)}


@dataclass(frozen=True)
class Rerun:
    """What a re-run of run ``of`` does, every tuple in the graph's order."""

    of: str  # the earlier run's id
    chosen: tuple[str, ...]
    rerun: tuple[str, ...]  # the steps it runs again
    preserved: tuple[str, ...]  # the steps it keeps
    unfinished: tuple[str, ...]  # steps outside the chosen ones' reach that had not succeeded
    kept: Mapping[str, StepState]  # the earlier run's state of each preserved step
    reviewed: tuple[str, ...]  # milestone reviews that stand: all their steps are kept

    def facts(self) -> dict[str, Any]:
        return {
            "chosen": list(self.chosen),
            "steps": list(self.rerun),
            "preserved": list(self.preserved),
            "unfinished": list(self.unfinished),
        }


def plan_rerun(graph: ExecutableGraph, previous: RunState, chosen: Iterable[str]) -> Rerun:
    """The re-run from ``chosen`` of the run whose state is ``previous``, a run of
    ``graph``'s version. Raises ``RerunRefused``."""
    asked = list(dict.fromkeys(chosen))
    if not asked:
        raise RerunRefused("name at least one step to run again", code="no_steps")
    unknown = sorted(step_id for step_id in asked if step_id not in graph.nodes)
    if unknown:
        raise RerunRefused(
            f"version {previous.plan_version} has no step "
            + ", ".join(f"'{step_id}'" for step_id in unknown),
            code="unknown_step",
            steps=tuple(unknown),
        )
    running = previous.with_status("running")
    if running or previous.status not in _STOPPED:
        raise RerunRefused(
            f"run {previous.run_id} is {previous.status}"
            + (f" with step(s) {', '.join(running)} running" if running else "")
            + ": cancel it or let it finish before running it again",
            code="run_in_progress",
            steps=running,
        )
    unsettled = previous.with_status("needs_reconciliation")
    if unsettled:
        raise RerunRefused(
            "step(s) " + ", ".join(f"'{step_id}'" for step_id in unsettled) + " of run "
            f"{previous.run_id} may have performed their side effect: reconcile them first",
            code="needs_reconciliation",
            steps=unsettled,
        )
    reach = _descendants(graph, asked)
    steps = previous.steps
    unfinished: list[str] = []
    kept: dict[str, StepState] = {}
    for step_id in graph.order:
        if step_id in reach:
            continue
        step = steps.get(step_id)
        if (
            step is not None
            and step.status == "succeeded"
            and all(dep in kept for dep in graph.nodes[step_id].depends_on)
        ):
            kept[step_id] = step
        else:
            unfinished.append(step_id)
    reviewed = tuple(
        milestone.id
        for milestone in graph.document.milestones
        if milestone.review
        and previous.reviews.get(milestone.id) == "reviewed"
        and all(step_id in kept for step_id in milestone.steps)
    )
    order = {step_id: i for i, step_id in enumerate(graph.order)}
    return Rerun(
        of=previous.run_id,
        chosen=tuple(sorted(asked, key=order.__getitem__)),
        rerun=tuple(step_id for step_id in graph.order if step_id not in kept),
        preserved=tuple(kept),
        unfinished=tuple(unfinished),
        kept=kept,
        reviewed=reviewed,
    )


def _descendants(graph: ExecutableGraph, roots: Iterable[str]) -> set[str]:
    seen = set(roots)
    frontier = list(seen)
    while frontier:
        for child in graph.dependents(frontier.pop()):
            if child not in seen:
                seen.add(child)
                frontier.append(child)
    return seen
