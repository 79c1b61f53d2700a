"""The agent seam: how a run hands an agent step (``tools_allowed`` without ``tool``) to
whatever runs it, and what it grants that step.

An agent step's calls are chosen at run time, so the run gives the agent what it needs
to bind and admit them as the compiler would have: the outputs of the step's
dependencies (its inputs), the plan's goal and ``requires_approval_before``, the step's
approval token when a person approved it, and the tokens and cost it may spend. Every
call still goes through the ToolExecutor; the agent answers with one ``ToolResult``
whose tokens and cost are the whole step's, so the Scheduler's budget counts them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from forge.compiler import ExecutableGraph, ExecutableNode
from forge.runners.base import RunContext
from forge.runtime.approvals import ApprovalToken
from forge.runtime.results import ToolResult
from forge.runtime.state import RunState

__all__ = ["AgentGrant", "AgentPort", "agent_grant"]


@dataclass(frozen=True)
class AgentGrant:
    """What a run grants one agent step. ``max_tokens`` and ``max_cost`` are the step's
    allowance (``None``: unlimited); ``token`` is the step's approval, if one was given."""

    goal: str = ""
    approval_scopes: tuple[str, ...] = ()
    token: ApprovalToken | None = None
    max_tokens: int | None = None
    max_cost: float | None = None


class AgentPort(Protocol):
    """Runs an agent step, each tool call through the ToolExecutor. ``inputs`` maps each
    dependency's id to its output. Never raises for a failure: it is a failed result."""

    def run_step(
        self,
        node: ExecutableNode,
        context: RunContext,
        inputs: Mapping[str, Any],
        grant: AgentGrant | None = None,
    ) -> ToolResult: ...


def agent_grant(
    graph: ExecutableGraph, state: RunState, step_id: str, token: ApprovalToken | None = None
) -> AgentGrant:
    """The grant of a started agent step: what admission reserved for it (its estimate,
    or the deployment's allowance for a step without one: ``forge.runtime.reservations``),
    never more than what the run's budget has left (the reservation counts as left for
    this step); what the budget has left when nothing was reserved."""
    document = graph.document
    budget = document.budget
    step = state.steps[step_id]
    left_tokens = (
        None
        if budget.max_tokens is None
        else max(0, budget.max_tokens - state.used_tokens + step.reserved_tokens)
    )
    left_cost = (
        None
        if budget.max_cost is None
        else max(0.0, budget.max_cost - state.used_cost + step.reserved_cost)
    )
    return AgentGrant(
        goal=document.goal,
        approval_scopes=document.requires_approval_before,
        token=token,
        max_tokens=_least(step.reserved_tokens or None, left_tokens),
        max_cost=_least(step.reserved_cost or None, left_cost),
    )


def _least[T: (int, float)](a: T | None, b: T | None) -> T | None:
    if a is None:
        return b
    return a if b is None else min(a, b)
