"""What a rule is matched against: the facts of a version's impact (the summary the
review card shows, ``forge.compiler.impact``) or of one step of it."""

from __future__ import annotations

from dataclasses import dataclass

from forge.compiler import ExecutableNode, Impact
from forge.compiler.impact import call_host

__all__ = ["Subject"]


@dataclass(frozen=True)
class Subject:
    side_effects: frozenset[str] = frozenset()
    tools: frozenset[str] = frozenset()
    servers: frozenset[str] = frozenset()
    scopes: frozenset[str] = frozenset()
    hosts: frozenset[str] = frozenset()
    cost: float = 0.0
    tokens: int = 0
    steps: int = 0

    @classmethod
    def of_impact(cls, impact: Impact) -> Subject:
        """A whole version, as its impact summary says."""
        return cls(
            side_effects=frozenset(effect for effect, _ in impact.side_effects),
            tools=frozenset(impact.tools),
            servers=frozenset(use.server for use in impact.mcp),
            scopes=frozenset(impact.scopes),
            hosts=frozenset(host.lower() for host in impact.hosts),
            cost=impact.cost,
            tokens=impact.tokens,
            steps=impact.steps,
        )

    @classmethod
    def of_step(cls, node: ExecutableNode) -> Subject:
        """One step: its tool (or an agent step's allowed tools), their servers and
        scopes, its side effect, its host when known now, and its own estimate."""
        binding = node.binding
        tools = (binding.tool,) if binding is not None else node.allowed_tools
        if binding is not None:
            effects = frozenset({binding.side_effect})
        else:
            effects = frozenset(tool.side_effect for tool in tools)
        hosts: frozenset[str] = frozenset()
        if binding is not None and binding.tool.name == "http_request":
            host = call_host(binding.args.get("url"))
            hosts = frozenset({host.lower()}) if host else frozenset()
        estimate = node.step.estimate
        return cls(
            side_effects=effects,
            tools=frozenset(tool.name for tool in tools),
            servers=frozenset(
                tool.source.removeprefix("mcp:") for tool in tools if tool.source.startswith("mcp:")
            ),
            scopes=frozenset(tool.permission_scope for tool in tools),
            hosts=hosts,
            cost=0.0 if estimate is None else float(estimate.cost),
            tokens=0 if estimate is None else int(estimate.tokens),
            steps=1,
        )
