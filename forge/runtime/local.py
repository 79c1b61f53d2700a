"""A run in this process: the same compiler, scheduler and ToolExecutor the workers use,
driven step by step, for ``forge run`` and for tests.

Steps run one at a time in topological order. An agent step goes to the ``agent`` (an
``AgentPort``) with its dependencies' outputs and its ``agent_grant``. When the run needs
a replan and a planner is given, the planner's proposal is compiled (with the side
effects already performed) and the run resumes on it: preserved steps keep their results
and never run again. A planner that fails (out of versions, model unreachable, invalid
output) leaves the run in ``needs_replan`` with the reason in ``stop_reason``.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from forge.compiler import (
    CompileResult,
    Diagnostic,
    ExecutableGraph,
    GraphCompiler,
    PerformedSideEffect,
)
from forge.errors import ForgeError
from forge.plan import PlanDocument
from forge.planners import Observation, PlannerPort
from forge.runners.base import RunContext
from forge.runtime.agent_port import AgentPort, agent_grant
from forge.runtime.approvals import ApprovalSigner, ApprovalToken
from forge.runtime.events import RunEvent
from forge.runtime.executor import ToolExecutor
from forge.runtime.results import ToolResult
from forge.runtime.scheduler import Scheduler, approval_hash
from forge.runtime.state import RunState

__all__ = ["AgentPort", "LocalRun", "LocalRunResult"]


@dataclass(frozen=True)
class LocalRunResult:
    status: str  # a run status, or "not_compiled"
    diagnostics: tuple[Diagnostic, ...]
    state: RunState | None
    events: tuple[RunEvent, ...]
    versions: tuple[PlanDocument, ...]
    stop_reason: str = ""


@dataclass
class LocalRun:
    compiler: GraphCompiler
    executor: ToolExecutor
    workspace: Path
    planner: PlannerPort | None = None
    agent: AgentPort | None = None
    approver: str | None = None  # approves every waiting step in this name when set
    signer: ApprovalSigner | None = None
    on_event: Callable[[RunEvent], None] | None = None
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    max_concurrency: int = 1  # one at a time: a failure stops everything after it
    _flushed: int = field(default=0, init=False, repr=False)

    def run(self, document: PlanDocument) -> LocalRunResult:
        compiled = self.compiler.compile(document)
        if compiled.graph is None:
            return LocalRunResult("not_compiled", compiled.diagnostics, None, (), (document,))
        versions = [document]
        scheduler = Scheduler(compiled.graph, self.run_id, max_concurrency=self.max_concurrency)
        tokens: dict[str, ApprovalToken] = {}
        scheduler.prepare()
        self._flush(scheduler)
        stop_reason = ""
        while True:
            admitted = scheduler.get_ready()
            self._flush(scheduler)
            for step_id in admitted:
                result = self._execute(scheduler, step_id, tokens.get(step_id))
                scheduler.done(step_id, result)
                self._flush(scheduler)
            if admitted:
                continue
            status = scheduler.state.status
            if status == "awaiting_approval" and self.approver is not None:
                self._approve_all(scheduler, tokens)
                continue
            if status == "needs_replan" and self.planner is not None:
                replanned = self._replan(scheduler, versions)
                if isinstance(replanned, str):
                    stop_reason = replanned
                    break
                compiled = replanned
                continue
            break
        return LocalRunResult(
            scheduler.state.status,
            compiled.diagnostics,
            scheduler.state,
            tuple(scheduler.events),
            tuple(versions),
            stop_reason,
        )

    def _execute(
        self, scheduler: Scheduler, step_id: str, token: ApprovalToken | None
    ) -> ToolResult:
        node = scheduler.graph.nodes[step_id]
        context = RunContext(
            run_id=self.run_id,
            step_id=step_id,
            workspace=self.workspace,
            timeout_s=node.binding.timeout_s if node.binding else (node.step.timeout_s or 300.0),
            attempt=scheduler.state.steps[step_id].attempt,
        )
        if node.binding is not None:
            return self.executor.execute(
                node.binding,
                context,
                token=token,
                plan_approval_scopes=scheduler.graph.document.requires_approval_before,
            )
        if self.agent is None:
            return ToolResult(
                "failed",
                error=f"step {step_id!r} is an agent step and no model is configured",
                error_code="no_model",
            )
        inputs = {dep: scheduler.state.steps[dep].output for dep in node.depends_on}
        grant = agent_grant(scheduler.graph, scheduler.state, step_id, token)
        return self.agent.run_step(node, context, inputs, grant)

    def _approve_all(self, scheduler: Scheduler, tokens: dict[str, ApprovalToken]) -> None:
        assert self.approver is not None
        for step_id in scheduler.state.with_status("awaiting_approval"):
            args_hash = approval_hash(scheduler.graph.nodes[step_id])
            if self.signer is not None:
                tokens[step_id] = self.signer.issue(self.run_id, step_id, args_hash, self.approver)
            scheduler.approve(step_id, self.approver, args_hash)
            self._flush(scheduler)

    def _replan(self, scheduler: Scheduler, versions: list[PlanDocument]) -> CompileResult | str:
        assert self.planner is not None
        state, graph = scheduler.state, scheduler.graph
        failed = state.failed_step
        failed_state = state.steps.get(failed) if failed else None
        observation = Observation(
            current=graph.document,
            current_version=state.plan_version,
            failed_step=failed,
            error=failed_state.error if failed_state else "",
            verdict=failed_state.verdict if failed_state else None,
            completed={
                sid: step.output for sid, step in state.steps.items() if step.status == "succeeded"
            },
            performed_side_effects=performed_side_effects(graph, state),
        )
        try:
            proposal = self.planner.plan(graph.document.goal, observation)
        except ForgeError as exc:  # exhausted, unreachable model, invalid plan output
            return f"{exc} [{exc.code}]"
        compiled = self.compiler.compile(proposal.document, observation.performed_side_effects)
        if compiled.graph is None:
            errors = "; ".join(d.message for d in compiled.diagnostics if d.severity == "error")
            return f"the replanned version does not compile: {errors}"
        versions.append(proposal.document)
        actor = getattr(self.planner, "name", "planner")
        scheduler.resume(compiled.graph, len(versions), actor)
        self._flush(scheduler)
        return compiled

    def _flush(self, scheduler: Scheduler) -> None:
        """Hand every event the scheduler wrote since the last flush to ``on_event``."""
        if self.on_event is not None:
            for event in scheduler.events[self._flushed :]:
                self.on_event(event)
        self._flushed = len(scheduler.events)


def performed_side_effects(
    graph: ExecutableGraph, state: RunState
) -> tuple[PerformedSideEffect, ...]:
    """Non-repeatable calls that succeeded: a replan must not silently do them again."""
    return tuple(
        PerformedSideEffect(node.binding.tool.name, step_id, node.binding.args_hash)
        for step_id, node in graph.nodes.items()
        if node.binding is not None
        and not node.binding.repeatable
        and state.steps.get(step_id) is not None
        and state.steps[step_id].status in ("succeeded", "needs_reconciliation")
    )
