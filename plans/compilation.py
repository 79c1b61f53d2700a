"""The deployment's toolbox and compiler, and what a stored version compiles to now.

``toolbox()`` is this process's one ``forge.toolbox.Toolbox``, built from settings on
first use: the built-ins (``http_request`` reaching ``FORGE_HTTP_ALLOWED_HOSTS``), the
installed Python tools and the MCP servers of the ``FORGE_MCP_SERVERS`` file, listed
again every ``FORGE_MCP_REFRESH_SECONDS``, with shell steps in ``FORGE_SANDBOX`` mode.
The web process compiles against it and the worker's executor runs its runners, so a
plan compiles and runs against one catalogue; its sessions close when the process exits.
``compiler()`` is the ``GraphCompiler`` over the current snapshot of those tools and the
policy of ``FORGE_POLICY`` (YAML or JSON, ``forge.tools.Policy.from_data``'s shape; empty:
``DEFAULT_POLICY``). The policy and the servers' file are read once per process and path:
a changed file takes effect on restart. An unreadable one is ``ImproperlyConfigured``.

Finding out what the servers offer may wait on them, so it happens only where nothing
else waits: ``refresh=False`` (for callers inside a database transaction, such as the
run engine) takes the snapshot as it is.
"""

from __future__ import annotations

import atexit
import functools
import sys
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from forge.compiler import CompileResult, ExecutableGraph, GraphCompiler, PerformedSideEffect
from forge.plan import ImportLimits, PlanDocument, from_data
from forge.tools import DEFAULT_POLICY, Policy, PolicyEngine, PolicyError, ToolRegistry
from plans.errors import VersionHasErrors, VersionNotApproved, VersionSuperseded

if TYPE_CHECKING:
    from forge.toolbox import Toolbox, ToolboxSnapshot
    from plans.models import PlanVersion

__all__ = [
    "compile_document",
    "compile_version",
    "compiler",
    "performed_side_effects",
    "policy",
    "registry",
    "runnable_graph",
    "stored_document",
    "toolbox",
    "tools",
]

# Stored documents passed the import limits of their day; reading them back must not
# fail because a setting has since been lowered.
_STORED = ImportLimits(max_bytes=sys.maxsize, max_steps=sys.maxsize)

_ToolboxKey = tuple[str, tuple[str, ...], int, str, int]
_toolbox: tuple[_ToolboxKey, Toolbox] | None = None
_toolbox_lock = threading.Lock()


def toolbox() -> Toolbox:
    """This process's toolbox, built from the settings (again, and the old one closed,
    when they changed: tests change them)."""
    global _toolbox
    key: _ToolboxKey = (
        str(getattr(settings, "FORGE_MCP_SERVERS", "") or ""),
        tuple(getattr(settings, "FORGE_HTTP_ALLOWED_HOSTS", ())),
        int(getattr(settings, "FORGE_MCP_REFRESH_SECONDS", 60)),
        str(settings.FORGE_SANDBOX),
        int(settings.FORGE_STEP_DISK_BYTES),
    )
    with _toolbox_lock:
        current = _toolbox
        if current is not None and current[0] == key:
            return current[1]
        built = _build_toolbox(key)
        _toolbox = (key, built)
    atexit.register(built.close)
    if current is not None:
        atexit.unregister(current[1].close)
        current[1].close()
    return built


def _build_toolbox(key: _ToolboxKey) -> Toolbox:
    # The runners (and, with servers, the MCP SDK) are imported only when first needed.
    from forge.runners import Limits
    from forge.runners.mcp_config import McpConfigError, load_mcp_servers
    from forge.toolbox import build_toolbox

    path, hosts, refresh_s, sandbox, disk_bytes = key
    try:
        servers = load_mcp_servers(Path(path)) if path else ()
        return build_toolbox(
            allowed_hosts=hosts,
            python_tools=True,
            mcp_servers=servers,
            sandbox="rlimits" if sandbox == "rlimits" else "bwrap",
            limits=Limits(disk_bytes=disk_bytes),
            refresh_s=float(refresh_s),
        )
    except McpConfigError as exc:
        raise ImproperlyConfigured(f"FORGE_MCP_SERVERS: {exc}") from None


def tools(*, refresh: bool = True) -> ToolboxSnapshot:
    """The deployment's tools now: discovered again first when due, unless ``refresh``
    is false (then as they are)."""
    box = toolbox()
    return box.snapshot() if refresh else box.current()


def registry() -> ToolRegistry:
    """The tools plans are compiled against: built-ins, installed Python tools, MCP tools."""
    return tools().registry


def policy() -> Policy:
    """The policy of ``settings.FORGE_POLICY`` (``DEFAULT_POLICY`` when empty)."""
    return _policy_at(str(getattr(settings, "FORGE_POLICY", "") or ""))


def compiler(*, refresh: bool = True) -> GraphCompiler:
    """This deployment's ``GraphCompiler`` (cached per tools snapshot and policy path)."""
    return _compiler_for(
        str(getattr(settings, "FORGE_POLICY", "") or ""),
        tools(refresh=refresh),
        int(getattr(settings, "FORGE_MILESTONE_WARN_STEPS", 50)),
    )


@functools.lru_cache(maxsize=8)
def _compiler_for(policy_path: str, snapshot: ToolboxSnapshot, warn_steps: int) -> GraphCompiler:
    return GraphCompiler(
        snapshot.registry, PolicyEngine(_policy_at(policy_path)), milestone_warn_steps=warn_steps
    )


@functools.lru_cache(maxsize=8)
def _policy_at(path: str) -> Policy:
    if not path:
        return DEFAULT_POLICY
    try:
        return Policy.from_file(Path(path))
    except PolicyError as exc:
        raise ImproperlyConfigured(f"FORGE_POLICY: {exc}") from None


def stored_document(version: PlanVersion) -> PlanDocument:
    """The ``PlanDocument`` a version stores."""
    return from_data(version.document, _STORED)


def performed_side_effects(version: PlanVersion) -> tuple[PerformedSideEffect, ...]:
    """The side effects already performed by runs of the version's ancestors."""
    return tuple(PerformedSideEffect.from_data(item) for item in version.performed_side_effects)


def compile_document(
    document: PlanDocument,
    side_effects: Iterable[PerformedSideEffect] = (),
    *,
    refresh: bool = True,
) -> CompileResult:
    return compiler(refresh=refresh).compile(document, side_effects)


def compile_version(version: PlanVersion, *, refresh: bool = True) -> CompileResult:
    """Compile a stored version now, with its performed side effects."""
    return compile_document(
        stored_document(version), performed_side_effects(version), refresh=refresh
    )


def runnable_graph(version: PlanVersion) -> ExecutableGraph:
    """The graph to run ``version`` with: it must be approved and compile now.

    Raises ``VersionNotApproved`` (409 ``not_approved``) unless the version's status is
    approved (``VersionSuperseded``, 409 ``superseded``, when a newer version of the plan
    was submitted while it waited), and ``VersionHasErrors`` (409 ``has_errors``, with
    the error diagnostics) when it does not compile with today's tools and policy, even
    if it did when stored.
    """
    from plans.models import VersionStatus

    if version.has_errors:
        raise VersionHasErrors(
            f"version {version.number} has compile errors and cannot be run",
            diagnostics=[d for d in version.diagnostics if d.get("severity") == "error"],
        )
    if version.status == VersionStatus.SUPERSEDED:
        raise VersionSuperseded.of(version, "run")
    if version.status != VersionStatus.APPROVED:
        raise VersionNotApproved(
            f"version {version.number} is {version.status}; only an approved version can be run"
        )
    result = compile_version(version)
    if result.graph is None:
        raise VersionHasErrors(
            f"version {version.number} no longer compiles with this deployment's tools and policy",
            diagnostics=[d.to_data() for d in result.errors],
        )
    return result.graph
