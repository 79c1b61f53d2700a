"""Where ``/mcp`` is served, for the endpoint (``forge_web.mcp``) and the deferred front
of it that the site's ASGI application routes to (``forge_web.mcp_startup``), which
imports the endpoint only on the first request."""

from __future__ import annotations

from asgiref.typing import Scope

__all__ = ["GATEWAY_PATH", "MCP_PATH", "is_gateway", "is_mcp", "is_mcp_path"]

MCP_PATH = "/mcp"
# The gateway (SPEC section 11): the upstream MCP servers' tools, every call through Forge.
GATEWAY_PATH = "/mcp/gateway"


def is_mcp(scope: Scope) -> bool:
    """Whether ``scope`` is an HTTP request for ``/mcp`` or a path under it."""
    return scope["type"] == "http" and is_mcp_path(scope["path"])


def is_mcp_path(path: str) -> bool:
    """Whether ``path`` is ``/mcp`` or a path under it."""
    return path == MCP_PATH or path.startswith(MCP_PATH + "/")


def is_gateway(scope: Scope) -> bool:
    """Whether ``scope`` (an ``/mcp`` request) is for the gateway, ``/mcp/gateway``."""
    path = scope["path"]
    return path == GATEWAY_PATH or path.startswith(GATEWAY_PATH + "/")
