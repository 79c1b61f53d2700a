"""The tools of one deployment: the registry the compiler checks plans against and the
runners the ToolExecutor calls, assembled from the built-ins, installed Python tools
(entry point group ``forge.tools``) and MCP servers. The CLI, the web process and the
workers all build theirs here, so a plan compiles and runs against the same catalogue
everywhere.

MCP servers come and go, so a ``Toolbox`` hands out immutable ``ToolboxSnapshot``s: a
registry and its runners as they were at one discovery. A compile uses one snapshot
throughout, and a new one is made only when something changed (its ``generation``
counts them), so compilers and executors built over a snapshot can be kept. Servers
are connected on the first snapshot, not when the toolbox is built, and listed again
once ``refresh_s`` has passed since the last discovery, or at once when a connection
knows its answer is stale (its session died, or the server said its tools changed).
A server that does not answer leaves its tools out and its name in the registry's
``unavailable``, with the reason, so the compiler reports ``tool_unavailable``; the
other tools are unaffected. ``close()`` ends every session.
"""

from __future__ import annotations

import functools
import itertools
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING

from forge.runners.base import Runner
from forge.runners.catalog import builtin_runner
from forge.runners.mcp_config import McpConfigError, McpServerConfig
from forge.runners.python import discover_python_tools
from forge.tools import BUILTIN_TOOLS, HostAllowList, ToolRegistry, ToolSpec, builtin_tools
from forge.tools.registry import SchemaUnsupported

if TYPE_CHECKING:
    from forge.runners.mcp_connection import McpConnection, McpDiscovery
    from forge.runners.sandbox import Limits, SandboxMode

__all__ = [
    "McpConfigError",
    "McpServerConfig",
    "ServerStatus",
    "Toolbox",
    "ToolboxSnapshot",
    "build_toolbox",
]


@dataclass(frozen=True)
class ServerStatus:
    """One MCP server as the last discovery found it. Never holds its command, URL,
    environment or headers, which may carry credentials."""

    name: str
    transport: str
    available: bool
    error: str
    tools: tuple[str, ...]
    checked_at: float  # seconds since the epoch


@dataclass(frozen=True, eq=False)
class ToolboxSnapshot:
    """The tools at one discovery. Compared by identity: a new snapshot is made only
    when a tool or a server's availability changed."""

    registry: ToolRegistry
    runners: Mapping[str, Runner]
    generation: int


@dataclass
class Toolbox:
    """Built-in and Python tools (fixed: ``base`` specs, ``base_runners`` by name) plus
    the tools of MCP ``connections``."""

    base: tuple[ToolSpec, ...]
    connections: tuple[McpConnection, ...] = ()
    refresh_s: float | None = None  # None: discover once
    clock: Callable[[], float] = time.monotonic
    base_runners: Mapping[str, Runner] = field(default_factory=dict)
    _snapshot: ToolboxSnapshot | None = field(default=None, init=False)
    _servers: tuple[ServerStatus, ...] = field(default=(), init=False)
    _discovered_at: float = field(default=0.0, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    _closed: bool = field(default=False, init=False)

    @property
    def registry(self) -> ToolRegistry:
        return self.snapshot().registry

    @property
    def runners(self) -> Mapping[str, Runner]:
        return self.snapshot().runners

    def snapshot(self) -> ToolboxSnapshot:
        """The current tools, discovered again first when they are due. While another
        thread discovers, the previous snapshot is returned rather than waited for."""
        current = self._snapshot
        if current is not None and not self._due():
            return current
        if not self._lock.acquire(blocking=current is None):
            assert current is not None
            return current
        try:
            if self._snapshot is None or self._due():
                self._discover()
            assert self._snapshot is not None
            return self._snapshot
        finally:
            self._lock.release()

    def current(self) -> ToolboxSnapshot:
        """The snapshot as it is, without discovering (only the very first is made here):
        for callers inside a database transaction, which must not wait on a server."""
        return self._snapshot or self.snapshot()

    def refresh(self) -> ToolboxSnapshot:
        """Discover every server again now."""
        with self._lock:
            self._discover()
            assert self._snapshot is not None
            return self._snapshot

    def servers(self) -> tuple[ServerStatus, ...]:
        """Each MCP server as last discovered (discovering first if never done)."""
        self.current()
        return self._servers

    def close(self) -> None:
        """End every MCP session; safe to call twice."""
        self._closed = True
        for connection in self.connections:
            connection.close()

    def __enter__(self) -> Toolbox:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _due(self) -> bool:
        if any(connection.stale for connection in self.connections):
            return True
        if self.refresh_s is None or not self.connections:
            return False
        return self.clock() - self._discovered_at >= self.refresh_s

    def _discover(self) -> None:
        if self._closed:
            raise RuntimeError("the toolbox is closed")
        found: list[McpDiscovery] = []
        if self.connections:
            from concurrent.futures import ThreadPoolExecutor

            # Servers start and answer in parallel: one slow server costs its own time.
            with ThreadPoolExecutor(len(self.connections), "forge-mcp-discover") as pool:
                found = list(pool.map(lambda connection: connection.discover(), self.connections))
        self._discovered_at = self.clock()
        registry, runners, statuses = _assemble(
            self.base, self.base_runners, self.connections, found
        )
        self._servers = statuses
        previous = self._snapshot
        if previous is not None and _same(previous.registry, registry):
            return  # nothing changed: keep the snapshot (and what was built over it)
        generation = 1 if previous is None else previous.generation + 1
        self._snapshot = ToolboxSnapshot(registry, MappingProxyType(runners), generation)


def _assemble(
    base: Iterable[ToolSpec],
    base_runners: Mapping[str, Runner],
    connections: Sequence[McpConnection],
    found: Sequence[McpDiscovery],
) -> tuple[ToolRegistry, Mapping[str, Runner], tuple[ServerStatus, ...]]:
    specs = {spec.name: spec for spec in base}
    runners: dict[str, Runner] = {}  # the servers' (names never clash with the base's)
    unavailable: dict[str, str] = {}
    statuses = []
    now = time.time()
    for connection, discovery in zip(connections, found, strict=True):
        error = discovery.error or _conflict(discovery, specs)
        if error:
            unavailable[discovery.server] = error
        else:
            for spec, runner in discovery.tools:
                specs[spec.name], runners[spec.name] = spec, runner
        names = () if error else tuple(sorted(spec.name for spec, _ in discovery.tools))
        transport = connection.config.transport
        statuses.append(ServerStatus(discovery.server, transport, not error, error, names, now))
    registry = ToolRegistry(specs.values(), unavailable=unavailable)
    return registry, _Runners(runners, base_runners), tuple(statuses)


def _conflict(discovery: McpDiscovery, taken: Mapping[str, ToolSpec]) -> str:
    """Why a server's tools cannot join the registry (ids taken or repeated, a schema
    that is not valid JSON Schema), or ``""``: one bad tool must not crash the rest."""
    seen: set[str] = set()
    for spec, _ in discovery.tools:
        if spec.name in taken or spec.name in seen:
            return f"its tool id {spec.name!r} is already taken"
        seen.add(spec.name)
    try:
        ToolRegistry(spec for spec, _ in discovery.tools)
    except SchemaUnsupported as exc:  # a dialect no validator here knows, or invalid in it
        return exc.message
    except Exception as exc:  # fastjsonschema's errors for a schema it cannot compile
        return f"a tool's input schema is not valid JSON Schema ({exc})"
    return ""


def _same(old: ToolRegistry, new: ToolRegistry) -> bool:
    return list(old) == list(new) and dict(old.unavailable) == dict(new.unavailable)


def build_toolbox(
    *,
    allowed_hosts: Iterable[str] = (),
    python_tools: bool = True,
    mcp_servers: Sequence[McpServerConfig] = (),
    sandbox: SandboxMode = "bwrap",
    limits: Limits | None = None,
    refresh_s: float | None = None,
    startup_timeout_s: float = 30.0,
) -> Toolbox:
    """The built-ins (``http_request`` reaching only ``allowed_hosts``: its runner and its
    spec, which the compiler reads, share the one ``HostAllowList``), then installed
    Python tools, then each MCP server's tools, listed on first use and again every
    ``refresh_s`` seconds (never, when ``None``); shell steps run in ``sandbox`` mode
    under ``limits`` (``forge.runners.sandbox``). Raises ``McpConfigError`` when two
    servers share a name."""
    names = [config.name for config in mcp_servers]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise McpConfigError(f"MCP server name(s) given twice: {', '.join(repeated)}")
    hosts = HostAllowList.of(allowed_hosts)
    builtins = _BuiltinRunners(
        [spec.name for spec in BUILTIN_TOOLS],
        functools.partial(builtin_runner, allowed_hosts=hosts, sandbox=sandbox, limits=limits),
    )
    installed = discover_python_tools() if python_tools else []
    base = (*builtin_tools(hosts), *(spec for spec, _ in installed))
    ToolRegistry(base)  # a Python tool may not reuse a built-in's name
    runners = _Runners({spec.name: runner for spec, runner in installed}, builtins)
    connections: tuple[McpConnection, ...] = ()
    if mcp_servers:
        # the MCP SDK takes most of a second to import: only pay when servers are used
        from forge.runners.mcp_connection import McpConnection

        connections = tuple(
            McpConnection(config, startup_timeout_s=startup_timeout_s) for config in mcp_servers
        )
    return Toolbox(base, connections, refresh_s, base_runners=runners)


class _BuiltinRunners(Mapping[str, Runner]):
    """The built-in runners, each made (and its module imported) when its tool is first
    looked up: compiling needs only the tools' specs, a run of ``echo`` steps only the
    basic runner, and the other runners' modules (processes, SQLite, HTTP) were a third
    of a short command's start-up."""

    def __init__(self, names: Sequence[str], make: Callable[[str], Runner]) -> None:
        self._names = frozenset(names)
        self._order = tuple(names)
        self._make = make
        self._made: dict[str, Runner] = {}
        self._lock = threading.Lock()

    def __getitem__(self, name: str) -> Runner:
        if name not in self._names:
            raise KeyError(name)
        with self._lock:
            runner = self._made.get(name)
            if runner is None:
                runner = self._made[name] = self._make(name)
            return runner

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __iter__(self) -> Iterator[str]:
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._order)


class _Runners(Mapping[str, Runner]):
    """``first``'s runners, then ``then``'s, whose names the registry keeps apart; a
    lookup of one leaves the other untouched (``_BuiltinRunners`` stay unmade)."""

    def __init__(self, first: Mapping[str, Runner], then: Mapping[str, Runner]) -> None:
        self._first = first
        self._then = then

    def __getitem__(self, name: str) -> Runner:
        runner = self._first.get(name)
        return self._then[name] if runner is None else runner

    def __contains__(self, name: object) -> bool:
        return name in self._first or name in self._then

    def __iter__(self) -> Iterator[str]:
        return itertools.chain(self._first, self._then)

    def __len__(self) -> int:
        return len(self._first) + len(self._then)
