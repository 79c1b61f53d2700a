"""The workflow primitives of SPEC section 2 under the seed's names: tasks, graphs, plans,
execution, contracts, replanning and budgets. A face with no rule of its own: structure
and the deliverable are the compiler's, readiness, replanning, contracts and the budget
the runtime's (docs/ARCHITECTURE.md, "Where each rule lives"). No I/O."""

from forge.workflow.budget import WorkflowBudget
from forge.workflow.executor import Executor, TaskResult
from forge.workflow.graph import Task, TaskGraph
from forge.workflow.planner import Plan, create_plan
from forge.workflow.replan import ReplanDecision, affected_subgraph, replan
from forge.workflow.validation import ResultContract, ValidationResult, validate_output
from forge.workflow.workflow import WorkflowRun, run_workflow

__all__ = [
    "Executor",
    "Plan",
    "ReplanDecision",
    "ResultContract",
    "Task",
    "TaskGraph",
    "TaskResult",
    "ValidationResult",
    "WorkflowBudget",
    "WorkflowRun",
    "affected_subgraph",
    "create_plan",
    "replan",
    "run_workflow",
    "validate_output",
]
