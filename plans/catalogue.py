"""The tool catalogue as plan authors see it: each tool's contract and what policy says,
and the MCP servers the tools come from.

One entry per tool of the deployment's registry, by name, with whether the policy lets a
plan use it at all and whether its calls always wait for a person's approval (a plan's
own ``requires_approval_before`` can add more, never fewer). An MCP tool's schema is its
``inputSchema`` and its side effect its annotations' reading (``forge.runners.mcp``).
``tool_servers`` says, per MCP server, whether it answered when last asked and why not.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from forge.tools import PolicyEngine, ToolSpec
from plans import compilation

if TYPE_CHECKING:
    from forge.toolbox import ServerStatus

__all__ = ["server_entry", "tool_catalogue", "tool_servers"]


def tool_catalogue() -> list[dict[str, Any]]:
    compiler = compilation.compiler()  # one snapshot of the tools for the whole list
    return [_entry(spec, compiler.policy) for spec in compiler.registry]


def tool_servers() -> list[dict[str, Any]]:
    """Each configured MCP server as this process last found it."""
    compilation.tools()  # discovered again first, when due
    return [server_entry(status) for status in compilation.toolbox().servers()]


def server_entry(status: ServerStatus) -> dict[str, Any]:
    return {
        "name": status.name,
        "transport": status.transport,
        "available": status.available,
        "error": status.error,
        "tools": list(status.tools),
        "checked_at": datetime.fromtimestamp(status.checked_at, UTC),
    }


def _entry(spec: ToolSpec, engine: PolicyEngine) -> dict[str, Any]:
    decision = engine.decide(spec)
    return {
        "name": spec.name,
        "description": spec.description,
        "args_schema": json.loads(json.dumps(spec.args_schema, default=dict)),  # plain
        "permission_scope": spec.permission_scope,
        "side_effect": spec.side_effect,
        "idempotent": spec.idempotent,
        "risk": spec.risk,
        "default_timeout_s": spec.default_timeout_s,
        "source": spec.source,
        # what a later step can take from its output ($from, docs/plan-format.md)
        "output_schema": None
        if spec.output_schema is None
        else json.loads(json.dumps(spec.output_schema, default=dict)),
        "echoes_args": spec.echoes_args,
        "allowed": decision.allowed,
        "requires_approval": decision.requires_approval,
        "policy_reasons": list(decision.approval_reasons)
        if decision.allowed
        else [decision.reason],
    }
