"""Calls through the gateway: checked, forwarded once, answered, audited.

A bound call (SPEC section 11) executes one step of a run started with ``executor:
"agent"``. Under the run's lock (``runs.engine.locked_run``) the call is checked against
the step (``forge.gateway.binding.check_bound_call``: the run is the agent's, the step
calls this tool, is ready and not done, and the arguments are its approved ones with
``$from`` resolved by Forge), then claimed exactly as a worker claims a step
(``runs.worker.claim_for_agent``): the Scheduler admits it, which asks the one approval
gate (``forge.runtime.gate``) to clear the run's version again, and the step's row moves
to ``running`` by compare-and-swap with a fresh fencing token. The claim commits before
anything is forwarded: a second call of the same step finds it running
(``step_not_ready``) or done (``step_done``), so the upstream tool is called once. The
call then goes through the deployment's ``ToolExecutor`` (schema, policy, approval token,
timeout, the execution record keyed by run, step and attempt) with its lease kept by the
worker's heartbeat; the result is recorded as a worker's is (``runs.worker.finish``):
the step's output, ``done_when``, the run's events, live page and websocket. A web
process that dies between the claim and the record leaves the step ``running`` until its
lease expires; the reaper then sends a step that is not repeatable to
``needs_reconciliation``, never calling it a second time.

Audit: ``gateway.call_refused`` for a refusal, ``gateway.call_forwarded`` with the claim,
``gateway.call_answered`` once the answer is stored, each with the arguments' hash.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404

from accounts.permissions import ensure_permission
from audit.services import record
from forge.gateway.binding import (
    BoundCall,
    GatewayRefused,
    arguments_hash,
    check_bound_call,
)
from forge.runtime.calls import UnresolvedCall
from forge.runtime.events import EventType
from plans.compilation import tools
from runs.engine import LockedRun, locked_run
from runs.models import Run, StepRun
from runs.worker import Claim, claim_for_agent, execute_claim, finish

__all__ = ["CallAnswer", "call_bound"]


@dataclass(frozen=True)
class CallAnswer:
    """What the agent is told of a forwarded call (``POST /gateway/calls``'s answer)."""

    tool: str
    run: int | None
    step: str | None
    is_error: bool
    structured: bool
    output: Any
    error: str = ""
    error_code: str = ""
    step_status: str | None = None
    run_status: str | None = None

    def to_data(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "run": self.run,
            "step": self.step,
            "is_error": self.is_error,
            "structured": self.structured,
            "output": self.output,
            "error": self.error,
            "error_code": self.error_code,
            "step_status": self.step_status,
            "run_status": self.run_status,
        }


def _actor(user: Any) -> str:
    return str(user.get_username())


def call_bound(user: Any, bound: BoundCall, tool: str, arguments: Mapping[str, Any]) -> CallAnswer:
    """Execute step ``bound.step_id`` of run ``bound.run_id`` as the call ``tool(arguments)``
    the agent of ``user`` made; raises ``GatewayRefused`` (nothing forwarded), 404 for an
    unknown run, ``PermissionDenied`` for a run another user started."""
    ensure_permission(user, "run.start")
    run = get_object_or_404(Run, pk=bound.run_id)
    if run.started_by_id != user.pk:
        raise PermissionDenied(
            f"run {run.pk} was started by another user: only its starter's agent executes it"
        )
    tools()  # MCP servers listed again when due, before the run's lock is taken
    payload = {
        "run": run.pk,
        "step": bound.step_id,
        "tool": tool,
        "args_hash": arguments_hash(arguments),
    }
    try:
        with locked_run(run.pk) as locked:
            claim = _claim(locked, bound, tool, arguments)
            if claim is not None:
                record(_actor(user), "gateway.call_forwarded", "run", run.pk, payload)
        if claim is None:
            # Admission refused after the checks: the gate's refusal (the run failed,
            # recorded with the gate's code) or the run's budget.
            raise _not_admitted(run.pk, bound)
    except GatewayRefused as refused:
        record(
            _actor(user),
            "gateway.call_refused",
            "run",
            run.pk,
            {**payload, "code": refused.code, "reason": refused.message},
        )
        raise
    result = execute_claim(claim)
    finish(claim, result, take_next=False)
    step = (
        StepRun.objects.filter(
            run_id=run.pk, plan_version=claim.plan_version, step_id=bound.step_id
        )
        .values("status")
        .get()
    )
    run.refresh_from_db(fields=["status"])
    record(
        _actor(user),
        "gateway.call_answered",
        "run",
        run.pk,
        {**payload, "status": result.status, "step_status": step["status"]},
    )
    return CallAnswer(
        tool=tool,
        run=run.pk,
        step=bound.step_id,
        is_error=not result.succeeded,
        structured=claim.node.binding is not None
        and claim.node.binding.tool.output_schema is not None,
        output=result.output,
        error=result.error,
        error_code=result.error_code,
        step_status=step["status"],
        run_status=run.status,
    )


def _claim(
    locked: LockedRun, bound: BoundCall, tool: str, arguments: Mapping[str, Any]
) -> Claim | None:
    scheduler = locked.scheduler
    node = scheduler.graph.nodes.get(bound.step_id)
    state = scheduler.state.steps.get(bound.step_id)
    status = None if state is None else state.status
    resolved = None
    if node is not None and status == "ready":
        try:
            resolved = scheduler.call(bound.step_id)
        except UnresolvedCall:
            resolved = None
    check_bound_call(
        bound,
        agent_run=locked.run.executor == "agent",
        node=node,
        status=status,
        tool=tool,
        arguments=arguments,
        resolved=resolved,
    )
    return claim_for_agent(locked, bound.step_id)


def _not_admitted(run_id: int, bound: BoundCall) -> GatewayRefused:
    run = Run.objects.get(pk=run_id)
    failed = (
        run.events.filter(event_type=EventType.RUN_FAILED).order_by("-seq").values("facts").first()
    )
    gate_code = (failed or {}).get("facts", {}).get("gate") if run.status == "failed" else None
    if gate_code:
        return GatewayRefused(
            f"the approval gate refused step {bound.step_id!r} of run {run_id}: "
            f"{run.blocked_reason or gate_code}",
            code="not_approved",
        )
    return GatewayRefused(
        f"step {bound.step_id!r} of run {run_id} was not admitted (the run is {run.status}"
        + (f": {run.blocked_reason}" if run.blocked_reason else "")
        + ")",
        code="step_not_ready",
    )
