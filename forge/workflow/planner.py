"""A plan binds a goal to a task graph and a terminal deliverable.

The deliverable's rules are the compiler's (``forge.compiler.deliverable``), the ones a
plan document's deliverable meets.
"""

from __future__ import annotations

from dataclasses import dataclass

from forge.compiler.deliverable import resolve_deliverable
from forge.compiler.diagnostics import Diagnostic
from forge.errors import WorkflowError
from forge.plan import PlanDocument
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
    structure = graph.structure
    document = PlanDocument(goal, tuple(structure.steps.values()), deliverable=deliverable_task_id)
    problems: list[Diagnostic] = []
    resolve_deliverable(document, structure, problems)
    for problem in problems:  # a task the deliverable does not need is no error here
        if problem.code == "missing_deliverable":
            raise WorkflowError(
                f"deliverable task {deliverable_task_id!r} is missing from the graph",
                code=problem.code,
                node_ids=problem.nodes,
            )
        if problem.code == "nonterminal_deliverable":
            dependents = problem.nodes[1:]
            raise WorkflowError(
                f"deliverable task {deliverable_task_id!r} is not terminal: "
                f"{', '.join(dependents)} depend(s) on it",
                code=problem.code,
                node_ids=problem.nodes,
            )
    return Plan(goal=goal, graph=graph, deliverable_task_id=deliverable_task_id)
