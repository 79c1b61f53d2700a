"""One configured MCP server kept usable for as long as a process lives.

``McpConnection`` starts the server (or connects to its URL) on first use, not before,
and keeps the session open. ``discover()`` lists the tools, restarting a session that
died since it was last used; a server that cannot be reached is not an exception but a
``McpDiscovery`` with an ``error`` naming it, so one broken server never takes the rest
of a deployment down. When to discover again is the caller's decision (the toolbox's
refresh interval); ``stale`` tells it that it should not wait: the session died, or the
server announced that its tool list changed.

A call first lists the tools on the session: that checks that it answers (a session
that does not is started again) and that the tool is still exactly the one the step was
compiled and approved against (its ``ToolSpec``: schema, annotations, hence side
effect); otherwise the call is refused with ``stale_binding`` before anything reaches
the server. (MCP's ping is gone from the protocol's 2026 revision; listing is not.) A
session that dies during a call fails that call (``mcp_unavailable``); it is not sent
again, since the server may have acted on it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import mcp.types as mcp_types

from forge.runners.errors import McpUnavailable, RunnerError
from forge.runners.mcp import McpServer, McpToolRunner, mcp_tool_spec
from forge.runners.mcp_config import McpServerConfig
from forge.tools.spec import ToolSpec

__all__ = ["McpConnection", "McpDiscovery"]

Starter = Callable[..., McpServer]


@dataclass(frozen=True)
class McpDiscovery:
    """What one server offers now: its tools with their runners, or why it offers none."""

    server: str
    tools: tuple[tuple[ToolSpec, McpToolRunner], ...] = ()
    error: str = ""

    @property
    def available(self) -> bool:
        return not self.error


class McpConnection:
    """The session to one configured server; safe to share between threads."""

    def __init__(
        self,
        config: McpServerConfig,
        *,
        startup_timeout_s: float = 30.0,
        request_timeout_s: float = 30.0,
        start: Starter = McpServer.start,
    ) -> None:
        self.config = config
        self.startup_timeout_s = startup_timeout_s
        self.request_timeout_s = request_timeout_s
        self._start = start
        self._lock = threading.RLock()
        self._server: McpServer | None = None
        self._stale = False

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def stale(self) -> bool:
        """Whether what the last ``discover()`` found may no longer hold."""
        return self._stale

    def discover(self) -> McpDiscovery:
        """The server's tools now, connecting first if need be; never raises for a server
        that is down or misbehaves (the discovery's ``error`` says what happened)."""
        with self._lock:
            try:
                tools = self._list()
            except RunnerError as exc:
                self._drop()
                self._stale = False  # this answer is current; the next refresh tries again
                return McpDiscovery(self.name, error=exc.message)
            self._stale = False
            return McpDiscovery(
                self.name,
                tuple(
                    (mcp_tool_spec(self.name, t), McpToolRunner(self, t.name, t.annotations))
                    for t in tools
                ),
            )

    def call_tool(
        self, name: str, arguments: Mapping[str, Any], *, timeout_s: float, spec: ToolSpec
    ) -> mcp_types.CallToolResult:
        """Call the remote tool ``name`` that ``spec`` describes. Raises ``McpUnavailable``,
        ``RunnerTimeout``, ``RunnerError`` (``mcp_error``, or ``stale_binding`` when a
        restarted server's tool is no longer ``spec``)."""
        server = self._answering(name, spec)
        try:
            return server.call_tool(name, arguments, timeout_s=timeout_s)
        except McpUnavailable:
            with self._lock:
                if self._server is server:
                    self._drop()
            raise

    def close(self) -> None:
        """Stop the session (and a stdio server's process); the next use starts again."""
        with self._lock:
            self._drop()

    def _answering(self, name: str, spec: ToolSpec) -> McpServer:
        with self._lock:
            server, listed, restarted = self._server, None, False
            if server is not None:
                try:  # the liveness check, and the tool as the server describes it now
                    listed = server.list_tools(timeout_s=self.request_timeout_s)
                except RunnerError:
                    self._drop()
            if listed is None:
                server, restarted = self._connected(), True
                listed = server.list_tools(timeout_s=self.request_timeout_s)
                self._stale = True  # the toolbox lists the new session before its next use
            current = next((tool for tool in listed if tool.name == name), None)
            if current is None or mcp_tool_spec(self.name, current) != spec:
                # Not what the step was compiled and approved against: never call it.
                self._stale = True
                raise RunnerError(
                    f"tool {spec.name!r} of MCP server {self.name!r} changed since the plan "
                    f"was compiled{' (the server was restarted)' if restarted else ''}",
                    code="stale_binding",
                )
            assert server is not None
            return server

    def _list(self) -> list[mcp_types.Tool]:
        server = self._connected()
        try:
            return server.list_tools(timeout_s=self.request_timeout_s)
        except McpUnavailable:
            # The session died since it was last used: start it once more.
            self._drop()
            return self._connected().list_tools(timeout_s=self.request_timeout_s)

    def _connected(self) -> McpServer:
        if self._server is None:
            self._server = self._start(
                self.config,
                startup_timeout_s=self.startup_timeout_s,
                on_tools_changed=self._tools_changed,
            )
        return self._server

    def _tools_changed(self) -> None:
        self._stale = True

    def _drop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            self._stale = True
            server.close()
