"""Local replanning: which tasks a failure invalidates, and which results survive it.

The rules are the Scheduler's (``forge.runtime.dependencies``): reset is the failed task
and its transitive dependents, preserved the succeeded tasks outside it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from forge.errors import WorkflowError
from forge.runtime.dependencies import preserved_steps, reset_steps
from forge.workflow.executor import TaskResult
from forge.workflow.graph import TaskGraph

__all__ = ["ReplanDecision", "affected_subgraph", "replan"]


@dataclass(frozen=True)
class ReplanDecision:
    reset_task_ids: tuple[str, ...]
    preserved_task_ids: tuple[str, ...]


def affected_subgraph(graph: TaskGraph, failed_id: str) -> tuple[str, ...]:
    """The failed task and every task that depends on it, directly or transitively, sorted."""
    if failed_id not in graph.tasks:
        raise WorkflowError(
            f"failed task {failed_id!r} is missing from the graph", node_ids=(failed_id,)
        )
    return tuple(sorted(reset_steps(failed_id, graph.dependents().__getitem__)))


def replan(graph: TaskGraph, results: Mapping[str, TaskResult], failed_id: str) -> ReplanDecision:
    """Reset the failed task's affected subgraph; preserve succeeded tasks outside it.

    Pure: nothing is executed and neither ``graph`` nor ``results`` is changed.
    """
    reset = affected_subgraph(graph, failed_id)
    statuses = ((task_id, result.status) for task_id, result in results.items())
    preserved = preserved_steps(statuses, set(reset))
    return ReplanDecision(reset_task_ids=reset, preserved_task_ids=tuple(preserved))
