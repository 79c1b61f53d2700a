"""What the gateway's MCP server asks of Forge (``forge.gateway.server``): the tools it
offers, a call, a held call's status. One implementation for both ways in: the REST API
(``gateway.api``, which ``forge gateway --url`` calls over HTTP) and ``/mcp/gateway`` in
the web process (``forge_web.mcp_gateway``, which calls these functions directly rather
than making an HTTP request back into its own process). Each takes the acting user and
raises what the API turns into its errors (``GatewayRefused`` and its subclasses,
``PermissionDenied``, ``Http404``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.http import Http404
from django.shortcuts import get_object_or_404

from accounts.permissions import ensure_permission
from forge.gateway.binding import BoundCall
from forge.gateway.catalogue import gateway_tools
from gateway import held, services
from gateway.models import HeldCall
from plans.compilation import tools

__all__ = ["call", "call_status", "offered_tools"]


def offered_tools(user: Any) -> list[dict[str, Any]]:
    """The tools the gateway offers now (``tool.view``), as ``GET /gateway/tools``."""
    ensure_permission(user, "tool.view")
    return [tool.to_data() for tool in gateway_tools(tools())]


def call(
    user: Any,
    tool: str,
    arguments: Mapping[str, Any],
    *,
    run: int | None = None,
    step: str | None = None,
) -> dict[str, Any]:
    """One call through the gateway, bound to a run's step when ``run`` or ``step`` is
    given, else unbound; the answer as ``POST /gateway/calls`` gives it."""
    bound = BoundCall.from_meta(
        {"forge/run": run, "forge/step": step} if run is not None or step is not None else None
    )
    if bound is None:
        answered = held.call_unbound(user, tool, arguments)
        return {
            **answered,
            "tool": tool,
            "run": None,
            "step": None,
            "step_status": None,
            "run_status": None,
        }
    return services.call_bound(user, bound, tool, arguments).to_data()


def call_status(user: Any, call_id: int) -> str:
    """Held call ``call_id``'s status, for the agent that asked or those who may decide
    it (``Http404`` for anyone else)."""
    found = get_object_or_404(HeldCall, pk=call_id)
    if found.user_id != user.pk and not user.can("step.approve"):
        raise Http404
    return str(found.status)
