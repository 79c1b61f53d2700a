"""Tasks and the task graph: structure only, validated the moment it is built.

A graph whose remaining tasks can never become ready is a deadlock, not a completion:
``topological_order`` raises instead of returning a partial order.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from forge.errors import WorkflowError

__all__ = ["Task", "TaskGraph"]


@dataclass(frozen=True)
class Task:
    """One unit of work: its id, the ids it depends on, and an optional handler.

    ``tokens`` and ``cost`` are the estimates ``run_workflow`` reserves from the budget
    before the task runs.
    """

    id: str
    depends_on: tuple[str, ...] = ()
    handler: Callable[[], Any] | None = field(default=None, compare=False)
    tokens: int = 0
    cost: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "depends_on", tuple(self.depends_on))


class TaskGraph:
    """An immutable DAG of tasks, rejected at construction if a dependency is missing
    or the tasks form a cycle."""

    def __init__(self, tasks: Iterable[Task]) -> None:
        by_id: dict[str, Task] = {}
        for task in tasks:
            if task.id in by_id:
                raise WorkflowError(f"duplicate task id {task.id!r}", node_ids=(task.id,))
            by_id[task.id] = task
        self._tasks: Mapping[str, Task] = by_id
        for task in by_id.values():
            for dep in task.depends_on:
                if dep not in by_id:
                    raise WorkflowError(
                        f"task {task.id!r} depends on missing task {dep!r}",
                        code="missing_dependency",
                        node_ids=(task.id, dep),
                    )
        self._order = self._sort()

    @property
    def tasks(self) -> Mapping[str, Task]:
        return self._tasks

    def dependents(self) -> dict[str, tuple[str, ...]]:
        """Map each task id to the sorted ids of the tasks that depend on it directly."""
        result: dict[str, list[str]] = {task_id: [] for task_id in self._tasks}
        for task in self._tasks.values():
            for dep in task.depends_on:
                result[dep].append(task.id)
        return {task_id: tuple(sorted(ids)) for task_id, ids in result.items()}

    def topological_order(self) -> tuple[str, ...]:
        """Every task id, each after all of its dependencies (ties broken by id).

        Raises ``ValueError`` when tasks remain pending but none is ready: that is a
        cycle, and returning the partial order would pass a deadlock off as completion.
        """
        return self._order

    def _sort(self) -> tuple[str, ...]:
        waiting = {task_id: len(set(task.depends_on)) for task_id, task in self._tasks.items()}
        dependents = self.dependents()
        ready = [task_id for task_id, count in waiting.items() if count == 0]
        heapq.heapify(ready)
        order: list[str] = []
        while ready:
            task_id = heapq.heappop(ready)
            order.append(task_id)
            for child in dependents[task_id]:
                waiting[child] -= 1
                if waiting[child] == 0:
                    heapq.heappush(ready, child)
        if len(order) < len(self._tasks):
            stuck = tuple(sorted(set(self._tasks) - set(order)))
            raise WorkflowError(
                f"tasks {', '.join(stuck)} can never become ready: the graph has a cycle",
                code="cycle",
                node_ids=stuck,
            )
        return tuple(order)

    def __len__(self) -> int:
        return len(self._tasks)

    def __repr__(self) -> str:
        return f"TaskGraph({list(self._tasks)!r})"
