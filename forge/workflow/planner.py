"""A plan binds a goal to a task graph and a terminal deliverable."""

from __future__ import annotations

from dataclasses import dataclass

from forge.errors import WorkflowError
from forge.workflow.graph import TaskGraph

__all__ = ["Plan", "create_plan"]


@dataclass(frozen=True)
class Plan:
    goal: str
    graph: TaskGraph
    deliverable_task_id: str

    @property
    def order(self) -> tuple[str, ...]:
        return self.graph.topological_order()


def create_plan(goal: str, graph: TaskGraph, deliverable_task_id: str) -> Plan:
    """Bind ``goal`` to ``graph`` with ``deliverable_task_id`` as its deliverable.

    The deliverable must exist (``ValueError`` mentioning *missing*) and be terminal: if
    another task depends on it, the plan would report completion before that task ran
    (``ValueError`` mentioning *terminal*).
    """
    if deliverable_task_id not in graph.tasks:
        raise WorkflowError(
            f"deliverable task {deliverable_task_id!r} is missing from the graph",
            code="missing_deliverable",
            node_ids=(deliverable_task_id,),
        )
    dependents = graph.dependents()[deliverable_task_id]
    if dependents:
        raise WorkflowError(
            f"deliverable task {deliverable_task_id!r} is not terminal: "
            f"{', '.join(dependents)} depend(s) on it",
            code="nonterminal_deliverable",
            node_ids=(deliverable_task_id, *dependents),
        )
    return Plan(goal=goal, graph=graph, deliverable_task_id=deliverable_task_id)
