"""The tools the gateway offers: each tool of the MCP servers of ``FORGE_MCP_SERVERS``
that the toolbox has now, named as the catalogue names it (``<server>.<tool>``), with
the annotations the server declared, its input schema and its output schema.

Built-in and Python tools are not offered: the gateway stands between an agent and its
MCP servers, and a plan's built-in steps are run by Forge's workers."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from forge.toolbox import ToolboxSnapshot

__all__ = ["GatewayTool", "gateway_tools"]


@dataclass(frozen=True)
class GatewayTool:
    """One upstream tool as the gateway lists it. ``annotations`` are the server's own
    (MCP's camelCase keys, only those it set); ``side_effect`` is how Forge reads them."""

    name: str
    server: str
    remote_name: str
    description: str
    input_schema: Mapping[str, Any]
    output_schema: Mapping[str, Any] | None = field(default=None)
    annotations: Mapping[str, Any] = field(default_factory=dict)
    side_effect: str = "external"
    idempotent: bool = False

    def to_data(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "server": self.server,
            "remote_name": self.remote_name,
            "description": self.description,
            "input_schema": dict(self.input_schema),
            "output_schema": None if self.output_schema is None else dict(self.output_schema),
            "annotations": dict(self.annotations),
            "side_effect": self.side_effect,
            "idempotent": self.idempotent,
        }


def gateway_tools(snapshot: ToolboxSnapshot) -> tuple[GatewayTool, ...]:
    """The MCP tools of ``snapshot``, sorted by name (a server that is down has none)."""
    found: list[GatewayTool] = []
    for spec in snapshot.registry:
        if not spec.source.startswith("mcp:"):
            continue
        # An MCP tool's runner (forge.runners.mcp.McpToolRunner), read by its attributes:
        # importing that module imports the MCP SDK, which a web process loads only on its
        # first MCP request (forge_web.mcp_startup), and the review queue, which lists
        # held calls, imports this module on every page.
        runner = snapshot.runners.get(spec.name)
        remote_name = getattr(runner, "remote_name", None)
        if remote_name is None:
            continue
        hints = getattr(runner, "annotations", None)
        found.append(
            GatewayTool(
                name=spec.name,
                server=spec.source.removeprefix("mcp:"),
                remote_name=remote_name,
                description=spec.description,
                input_schema=spec.args_schema,
                output_schema=spec.output_schema,
                annotations={}
                if hints is None
                else hints.model_dump(by_alias=True, exclude_none=True, mode="json"),
                side_effect=spec.side_effect,
                idempotent=spec.idempotent,
            )
        )
    return tuple(found)
