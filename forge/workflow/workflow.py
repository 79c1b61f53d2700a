"""``run_workflow``: run a graph wave by wave, validating outputs, stopping at the first failure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from forge.errors import BudgetExceeded
from forge.workflow.budget import WorkflowBudget
from forge.workflow.executor import Executor, TaskResult
from forge.workflow.graph import TaskGraph
from forge.workflow.replan import affected_subgraph, replan
from forge.workflow.validation import ResultContract, validate_output

__all__ = ["WorkflowRun", "run_workflow"]

WorkflowStatus = Literal["succeeded", "needs_replan"]


@dataclass(frozen=True)
class WorkflowRun:
    status: WorkflowStatus
    completed: tuple[str, ...]
    reset: tuple[str, ...] = ()


def run_workflow(
    graph: TaskGraph,
    budget: WorkflowBudget,
    contracts: Mapping[str, ResultContract] | None = None,
) -> WorkflowRun:
    """Run ``graph`` in topological waves.

    Before each ``run_ready`` the wave's steps, tokens and cost are consumed from
    ``budget``, so a failing wave has still paid for itself. When the budget refuses,
    the refusal triggers a replan (seed 001): nothing of that wave runs, and the run
    ends ``needs_replan`` with the wave's tasks and their descendants as the reset set,
    so a new plan (cheaper tasks, or a larger budget a person approves) decides how to
    go on; completed tasks stay preserved. A handler failure
    or an output that breaks its contract ends the run at once with ``needs_replan``
    and the union of the failed tasks' reset sets; ``completed`` holds only tasks that
    succeeded with a valid output, in the order they finished.
    """
    contracts = contracts or {}
    executor = Executor(graph)
    completed: list[str] = []
    while ready := executor.ready():
        wave = [graph.tasks[task_id] for task_id in ready]
        try:
            budget.consume(
                len(wave), sum(task.tokens for task in wave), sum(task.cost for task in wave)
            )
        except BudgetExceeded:
            refused: set[str] = set()
            for task in wave:
                refused.update(affected_subgraph(graph, task.id))
            return WorkflowRun("needs_replan", tuple(completed), tuple(sorted(refused)))
        failed: list[str] = []
        for result in executor.run_ready():
            if _accepted(result, contracts.get(result.task_id)):
                completed.append(result.task_id)
            else:
                failed.append(result.task_id)
        if failed:
            reset: set[str] = set()
            for task_id in failed:
                reset.update(replan(graph, executor.results, task_id).reset_task_ids)
            return WorkflowRun("needs_replan", tuple(completed), tuple(sorted(reset)))
    return WorkflowRun("succeeded", tuple(completed))


def _accepted(result: TaskResult, contract: ResultContract | None) -> bool:
    if result.status != "succeeded":
        return False
    return contract is None or validate_output(result.output, contract).valid
