"""The dependency-aware executor: runs the tasks whose dependencies all succeeded.

A recorded result is not a success: a task waits until every dependency's result has
status ``succeeded``, so a failure upstream keeps everything below it from running. That
is the Scheduler's readiness rule, ``forge.runtime.dependencies.unmet_dependencies``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from forge.runtime.dependencies import unmet_dependencies
from forge.workflow.graph import TaskGraph

__all__ = ["Executor", "TaskResult"]

TaskStatus = Literal["succeeded", "failed"]


@dataclass(frozen=True)
class TaskResult:
    task_id: str
    status: TaskStatus
    output: Any = None
    error: str | None = None


class Executor:
    def __init__(self, graph: TaskGraph) -> None:
        self.graph = graph
        self.results: dict[str, TaskResult] = {}

    def _status(self, task_id: str) -> str | None:
        result = self.results.get(task_id)
        return None if result is None else result.status

    def ready(self) -> list[str]:
        """Sorted ids of unrun tasks whose dependencies all have status ``succeeded``."""
        return sorted(
            task.id
            for task in self.graph.tasks.values()
            if task.id not in self.results and not unmet_dependencies(task.depends_on, self._status)
        )

    def run_ready(self) -> tuple[TaskResult, ...]:
        """Run every ready task once, recording a handler's exception as a failed result."""
        ran = []
        for task_id in self.ready():
            handler = self.graph.tasks[task_id].handler
            try:
                output = handler() if handler is not None else None
            except Exception as exc:  # a task's failure is data, not a crash of the executor
                result = TaskResult(task_id, "failed", error=f"{type(exc).__name__}: {exc}")
            else:
                result = TaskResult(task_id, "succeeded", output=output)
            self.results[task_id] = result
            ran.append(result)
        return tuple(ran)
