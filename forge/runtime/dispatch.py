"""How one admitted step is carried out, for every host: the CLI's ``LocalRun`` and the
web's workers call ``dispatch`` alike.

A step with a bound tool goes to the ToolExecutor as its call: the binding with the
values it takes from earlier steps resolved, which the Scheduler made when the step
became ready (``Scheduler.call``) and its approval binds; an agent step (``tools_allowed``
without ``tool``) goes to the ``AgentPort`` with its dependencies' outputs and its
grant, or fails with ``no_model`` when no model is configured. The step runs in the
run's workspace under its own timeout: the binding's (the step's, else the tool's
default), or for an agent step the step's, else ``AGENT_TIMEOUT_S``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from forge.compiler import ExecutableNode, ToolBinding
from forge.runners.base import RunContext
from forge.runtime.agent_port import AgentGrant, AgentPort
from forge.runtime.approvals import ApprovalToken
from forge.runtime.executor import ToolExecutor
from forge.runtime.results import ToolResult
from forge.telemetry.switch import StepTrace
from forge.telemetry.switch import current as current_tracing

__all__ = ["AGENT_TIMEOUT_S", "StepDispatcher", "step_context"]

AGENT_TIMEOUT_S = 300.0


def step_context(run_id: str, node: ExecutableNode, workspace: Path, attempt: int) -> RunContext:
    """Where and for how long one attempt of ``node`` runs."""
    timeout_s = node.binding.timeout_s if node.binding else (node.step.timeout_s or AGENT_TIMEOUT_S)
    return RunContext(
        run_id=run_id, step_id=node.id, workspace=workspace, timeout_s=timeout_s, attempt=attempt
    )


@dataclass(frozen=True)
class StepDispatcher:
    """``no_model_hint`` tells the person how to configure a model (the CLI's flag, the
    web's setting)."""

    executor: ToolExecutor
    agent: AgentPort | None = None
    no_model_hint: str = ""

    def dispatch(
        self,
        node: ExecutableNode,
        context: RunContext,
        *,
        token: ApprovalToken | None,
        approval_scopes: tuple[str, ...],
        inputs: Mapping[str, Any],
        grant: AgentGrant | None,
        call: ToolBinding | None = None,
        trace: StepTrace | None = None,
    ) -> ToolResult:
        """Run one admitted step; never raises for a failure, which is a failed result.
        ``call`` is the step's resolved call (``Scheduler.call``); a step whose arguments
        name earlier outputs and that comes without it is refused by the executor.
        ``trace`` places the step's span in its run's trace when this process traces."""
        tracing = current_tracing()
        if tracing is None or trace is None:
            return self._dispatch(node, context, token, approval_scopes, inputs, grant, call)
        # The one step span of every host that traces (the workers).
        with tracing.step(
            trace, node.id, attempt=context.attempt, agent=node.binding is None
        ) as span:
            result = self._dispatch(node, context, token, approval_scopes, inputs, grant, call)
            span.ended(
                result.status,
                output=result.output,
                error_code=result.error_code,
                tokens=result.tokens,
                cost=result.cost,
            )
            return result

    def _dispatch(
        self,
        node: ExecutableNode,
        context: RunContext,
        token: ApprovalToken | None,
        approval_scopes: tuple[str, ...],
        inputs: Mapping[str, Any],
        grant: AgentGrant | None,
        call: ToolBinding | None,
    ) -> ToolResult:
        if node.binding is not None:
            return self.executor.execute(
                call if call is not None else node.binding,
                context,
                token=token,
                plan_approval_scopes=approval_scopes,
            )
        if self.agent is None:
            hint = f" ({self.no_model_hint})" if self.no_model_hint else ""
            return ToolResult(
                "failed",
                error=f"step {node.id!r} is an agent step and no model is configured{hint}",
                error_code="no_model",
            )
        return self.agent.run_step(node, context, inputs, grant)
