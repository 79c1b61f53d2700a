"""The dependency-aware executor: runs the tasks whose dependencies all succeeded.

A recorded result is not a success: a task waits until every dependency's result has
status ``succeeded``, so a failure upstream keeps everything below it from running.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

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

    def _succeeded(self, task_id: str) -> bool:
        result = self.results.get(task_id)
        return result is not None and result.status == "succeeded"

    def ready(self) -> list[str]:
        """Sorted ids of unrun tasks whose dependencies all have status ``succeeded``."""
        return sorted(
            task.id
            for task in self.graph.tasks.values()
            if task.id not in self.results and all(map(self._succeeded, task.depends_on))
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
