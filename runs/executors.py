"""Who executes a run's steps (SPEC section 11): a run started with ``executor: "agent"``
leaves the steps that call an MCP server's tool to the agent, which calls them through
the gateway; Forge's workers never claim nor queue them. Every other step, and every step
of a ``worker`` run, is the workers'."""

from __future__ import annotations

from collections.abc import Iterable

from forge.compiler import ExecutableGraph
from forge.gateway.binding import agents_step
from plans.compilation import tools as catalogue_tools
from runs.models import Run

__all__ = ["EXECUTORS", "agents_step_of", "agents_step_ids", "workers_steps"]

EXECUTORS = ("worker", "agent")


def agents_step_of(run: Run, graph: ExecutableGraph, step_id: str) -> bool:
    """Whether ``step_id`` of ``run`` is the agent's to execute through the gateway."""
    node = graph.nodes.get(step_id)
    return run.executor == "agent" and node is not None and agents_step(node)


def workers_steps(run: Run, graph: ExecutableGraph, step_ids: Iterable[str]) -> list[str]:
    """``step_ids`` without those the agent executes."""
    return [step_id for step_id in step_ids if not agents_step_of(run, graph, step_id)]


def agents_step_ids(run: Run, tools: Iterable[tuple[str, str]]) -> list[str]:
    """Of ``tools`` (each step's id and tool name), the steps ``run``'s agent executes,
    judged by the catalogue as this process has it (a tool of an MCP server that is down
    now is still a server's tool): what the run page says waits for the agent."""
    if run.executor != "agent":
        return []
    registry = catalogue_tools(refresh=False).registry
    found = []
    for step_id, tool in tools:
        if tool in registry:
            mcp = registry.get(tool).source.startswith("mcp:")
        else:
            mcp = registry.unavailable_reason(tool) is not None
        if mcp:
            found.append(step_id)
    return found
