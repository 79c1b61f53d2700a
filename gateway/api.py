"""The gateway's REST API (SPEC section 11), which ``/mcp/gateway`` and ``forge gateway``
call for every MCP request: ``GET /gateway/tools`` (``tool.view``) and ``POST
/gateway/calls`` (``run.start``; a bound call: the run's starter). Held calls are read and
decided by people who may approve steps (``step.approve``): ``GET /gateway/calls``,
``GET /gateway/calls/{id}``, ``POST /gateway/calls/{id}/approve|reject``.

No ``from __future__ import annotations`` here: ninja reads the operations' annotations
at runtime, and ``@paginate`` hides this module's names from string annotations.
"""

from typing import Any

from django.http import Http404, HttpRequest
from django.shortcuts import get_object_or_404
from ninja import Query, Router
from ninja.pagination import paginate

from accounts.permissions import require_permission
from forge.gateway.binding import BoundCall
from forge.gateway.catalogue import gateway_tools
from gateway import held, services
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
from plans.compilation import tools

router = Router(tags=["gateway"])


@router.get("/gateway/tools", response=list[GatewayToolOut])
@require_permission("tool.view")
def list_gateway_tools(request: HttpRequest) -> list[dict[str, Any]]:
    """The tools of the MCP servers of ``FORGE_MCP_SERVERS`` that answer now, named as the
    catalogue names them (``<server>.<tool>``), with their annotations and schemas."""
    return [tool.to_data() for tool in gateway_tools(tools())]


@router.post("/gateway/calls", response=CallOut)
def call_tool(request: HttpRequest, body: CallIn) -> dict[str, Any]:
    """Call an upstream tool through the gateway. With ``run`` and ``step``: execute that
    step of a run started with ``executor: "agent"`` (refused with a stable code, nothing
    forwarded, unless it is the step's approved call and the step is ready)."""
    bound = BoundCall.from_meta(
        {"forge/run": body.run, "forge/step": body.step}
        if body.run is not None or body.step is not None
        else None
    )
    if bound is None:
        answered = held.call_unbound(request.auth, body.tool, body.arguments)
        return {
            **answered,
            "tool": body.tool,
            "run": None,
            "step": None,
            "step_status": None,
            "run_status": None,
        }
    return services.call_bound(request.auth, bound, body.tool, body.arguments).to_data()


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
    call = get_object_or_404(HeldCall, pk=call_id)
    if call.user_id != request.auth.pk and not request.auth.can("step.approve"):
        raise Http404
    return {"id": call.pk, "status": call.status}


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
