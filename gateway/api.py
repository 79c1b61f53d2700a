"""The gateway's REST API (SPEC section 11), which ``/mcp/gateway`` and ``forge gateway``
call for every MCP request: ``GET /gateway/tools`` (``tool.view``) and ``POST
/gateway/calls`` (``run.start``; a bound call: the run's starter). Held calls are read and
decided by people who may approve steps (``step.approve``): ``GET /gateway/calls``,
``GET /gateway/calls/{id}``, ``POST /gateway/calls/{id}/approve|reject``.

No ``from __future__ import annotations`` here: ninja reads the operations' annotations
at runtime, and ``@paginate`` hides this module's names from string annotations.
"""

from typing import Any

from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import Query, Router
from ninja.pagination import paginate

from accounts.permissions import require_permission
from gateway import calls, held
from gateway.models import HeldCall
from gateway.schemas import (
    CallIn,
    CallOut,
    DecisionIn,
    GatewayToolOut,
    HeldCallFilters,
    HeldCallOut,
    HeldCallStatusOut,
)

router = Router(tags=["gateway"])


@router.get("/gateway/tools", response=list[GatewayToolOut])
@require_permission("tool.view")
def list_gateway_tools(request: HttpRequest) -> list[dict[str, Any]]:
    """The tools of the MCP servers of ``FORGE_MCP_SERVERS`` that answer now, named as the
    catalogue names them (``<server>.<tool>``), with their annotations and schemas."""
    return calls.offered_tools(request.auth)


@router.post("/gateway/calls", response=CallOut)
def call_tool(request: HttpRequest, body: CallIn) -> dict[str, Any]:
    """Call an upstream tool through the gateway. With ``run`` and ``step``: execute that
    step of a run started with ``executor: "agent"`` (refused with a stable code, nothing
    forwarded, unless it is the step's approved call and the step is ready)."""
    return calls.call(request.auth, body.tool, body.arguments, run=body.run, step=body.step)


@router.get("/gateway/calls", response=list[HeldCallOut])
@require_permission("step.approve")
@paginate
def list_held_calls(request: HttpRequest, filters: Query[HeldCallFilters]) -> Any:
    """Held calls, newest first (``?status=held``: those waiting for a decision)."""
    calls = HeldCall.objects.select_related("user", "decided_by")
    if filters.status:
        calls = calls.filter(status=filters.status)
    return [held.held_call_data(call) for call in calls]


@router.get("/gateway/calls/{call_id}", response=HeldCallOut)
@require_permission("step.approve")
def get_held_call(request: HttpRequest, call_id: int) -> dict[str, Any]:
    """One held call: server, tool, annotations, arguments, who asked and since when."""
    return held.held_call_data(get_object_or_404(HeldCall, pk=call_id))


@router.get("/gateway/calls/{call_id}/status", response=HeldCallStatusOut)
def held_call_status(request: HttpRequest, call_id: int) -> dict[str, Any]:
    """Its status, for the agent that asked (the MCP side waits on it): only the
    caller and those who may decide read it."""
    return {"id": call_id, "status": calls.call_status(request.auth, call_id)}


@router.post("/gateway/calls/{call_id}/approve", response=HeldCallOut)
def approve_held_call(request: HttpRequest, call_id: int, body: DecisionIn) -> dict[str, Any]:
    """Approve a held call (``step.approve``; never the caller's own): it is forwarded
    once, when the agent's call (or its repeat) takes it."""
    get_object_or_404(HeldCall, pk=call_id)
    return held.held_call_data(held.approve(call_id, request.auth, body.comment))


@router.post("/gateway/calls/{call_id}/reject", response=HeldCallOut)
def reject_held_call(request: HttpRequest, call_id: int, body: DecisionIn) -> dict[str, Any]:
    """Reject a held call (``step.approve``; never the caller's own)."""
    get_object_or_404(HeldCall, pk=call_id)
    return held.held_call_data(held.reject(call_id, request.auth, body.comment))
