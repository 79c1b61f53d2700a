"""The tools of one deployment: the registry the compiler checks plans against and the
runners the ToolExecutor calls, assembled from the built-ins, installed Python tools
(entry point group ``forge.tools``) and MCP servers. The CLI and the web worker both
build theirs here, so a plan compiles and runs against the same catalogue everywhere.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from forge.runners.base import Runner
from forge.runners.catalog import builtin_runners
from forge.runners.python import discover_python_tools
from forge.runners.sandbox import Limits, SandboxMode
from forge.tools import BUILTIN_TOOLS, ToolRegistry

if TYPE_CHECKING:
    from forge.runners.mcp import McpServer

__all__ = ["McpServerConfig", "Toolbox", "build_toolbox"]


@dataclass(frozen=True)
class McpServerConfig:
    """An MCP server to start over stdio: ``name=command args...``."""

    name: str
    command: tuple[str, ...]

    @classmethod
    def parse(cls, text: str) -> McpServerConfig:
        name, sep, command = text.partition("=")
        if not sep or not name or not command.strip():
            raise ValueError(f"an MCP server is given as NAME=COMMAND, not {text!r}")
        return cls(name.strip(), tuple(shlex.split(command)))


@dataclass
class Toolbox:
    registry: ToolRegistry
    runners: dict[str, Runner]
    servers: list[McpServer] = field(default_factory=list)

    def close(self) -> None:
        for server in self.servers:
            server.close()

    def __enter__(self) -> Toolbox:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def build_toolbox(
    *,
    allowed_hosts: Iterable[str] = (),
    python_tools: bool = True,
    mcp_servers: Sequence[McpServerConfig] = (),
    sandbox: SandboxMode = "bwrap",
    limits: Limits | None = None,
) -> Toolbox:
    """The built-ins, then installed Python tools, then each MCP server's tools; shell
    steps run in ``sandbox`` mode under ``limits`` (``forge.runners.sandbox``)."""
    registry = ToolRegistry(BUILTIN_TOOLS)
    runners = builtin_runners(allowed_hosts=allowed_hosts, sandbox=sandbox, limits=limits)
    toolbox = Toolbox(registry, runners)
    try:
        found = discover_python_tools() if python_tools else []
        if mcp_servers:
            # the MCP SDK takes most of a second to import: only pay when servers are used
            from forge.runners.mcp import McpServer
        for config in mcp_servers:
            server = McpServer(config.name, config.command)
            toolbox.servers.append(server)
            found += server.tools()
        for spec, runner in found:
            registry.register(spec)
            runners[spec.name] = runner
    except BaseException:
        toolbox.close()
        raise
    return toolbox
