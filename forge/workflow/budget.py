"""``WorkflowBudget``, the seed's name for the runtime's budget rule (``forge.runtime.budget``)."""

from forge.runtime.budget import WorkflowBudget

__all__ = ["WorkflowBudget"]
