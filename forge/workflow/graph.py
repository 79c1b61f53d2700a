"""Tasks and the task graph: structure only, validated the moment it is built.

The rules are the compiler's (``forge.compiler.structure``), the ones every plan's steps
meet: the tasks are analysed as steps, given sorted by id, so the topological order (the
earliest ready step first) breaks ties by id. A graph whose remaining tasks can never
become ready is a deadlock, not a completion: construction raises instead of keeping a
partial order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from forge.compiler.diagnostics import Diagnostic
from forge.compiler.structure import Structure, analyse_structure
from forge.errors import WorkflowError
from forge.plan import Step

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
    """An immutable DAG of tasks, rejected at construction if an id repeats, a dependency
    is missing or the tasks form a cycle. With several problems, the first kind in that
    order is raised, and within it the first task by id."""

    def __init__(self, tasks: Iterable[Task]) -> None:
        given = list(tasks)
        by_id = sorted(given, key=lambda task: task.id)
        structure = analyse_structure([Step(task.id, depends_on=task.depends_on) for task in by_id])
        if structure.diagnostics:
            raise _refusal(structure, structure.diagnostics[0])
        self._tasks: Mapping[str, Task] = {task.id: task for task in given}
        self._structure = structure

    @property
    def structure(self) -> Structure:
        """The compiler's analysis of the tasks as steps (``forge.compiler.structure``)."""
        return self._structure

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

        A cycle, where tasks remain pending but none is ready, raised ``ValueError`` when
        the graph was built: returning a partial order would pass a deadlock off as
        completion.
        """
        return self._structure.order

    def __len__(self) -> int:
        return len(self._tasks)

    def __repr__(self) -> str:
        return f"TaskGraph({list(self._tasks)!r})"


def _refusal(structure: Structure, problem: Diagnostic) -> WorkflowError:
    """The compiler's first structural error, in the seed's words."""
    if problem.code == "duplicate_id":
        return WorkflowError(f"duplicate task id {problem.nodes[0]!r}", node_ids=problem.nodes)
    if problem.code == "missing_dependency":
        task_id, dep = problem.nodes
        return WorkflowError(
            f"task {task_id!r} depends on missing task {dep!r}",
            code="missing_dependency",
            node_ids=problem.nodes,
        )
    # a cycle: every task it keeps from becoming ready, those behind it included
    placed = set(structure.order)
    stuck = tuple(sorted(task_id for task_id in structure.steps if task_id not in placed))
    return WorkflowError(
        f"tasks {', '.join(stuck)} can never become ready: the graph has a cycle",
        code="cycle",
        node_ids=stuck,
    )
