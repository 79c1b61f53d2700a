"""Local replanning: which tasks a failure invalidates, and which results survive it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from forge.errors import WorkflowError
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
    dependents = graph.dependents()
    affected = {failed_id}
    frontier = [failed_id]
    while frontier:
        for child in dependents[frontier.pop()]:
            if child not in affected:
                affected.add(child)
                frontier.append(child)
    return tuple(sorted(affected))


def replan(graph: TaskGraph, results: Mapping[str, TaskResult], failed_id: str) -> ReplanDecision:
    """Reset the failed task's affected subgraph; preserve succeeded tasks outside it.

    Pure: nothing is executed and neither ``graph`` nor ``results`` is changed.
    """
    reset = affected_subgraph(graph, failed_id)
    reset_set = set(reset)
    preserved = sorted(
        task_id
        for task_id, result in results.items()
        if result.status == "succeeded" and task_id not in reset_set
    )
    return ReplanDecision(reset_task_ids=reset, preserved_task_ids=tuple(preserved))
