"""One runner for each built-in tool of SPEC section 3, ready to inject into the executor."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from forge.runners.base import Runner
from forge.runners.basic import BASIC_TOOLS, BasicRunner
from forge.runners.modes import SandboxMode
from forge.tools.hosts import HostAllowList

if TYPE_CHECKING:
    from forge.runners.sandbox import Limits
    from forge.runners.shell import ShellRunner

__all__ = ["BUILTIN_RUNNER_TOOLS", "builtin_runner", "builtin_runners"]

BUILTIN_RUNNER_TOOLS = (
    *BASIC_TOOLS,
    "shell",
    "http_request",
    "file_read",
    "file_write",
    "file_search",
    "sql_read",
)


def builtin_runner(
    name: str,
    *,
    allowed_hosts: HostAllowList | Iterable[str] = (),
    sandbox: SandboxMode = "bwrap",
    limits: Limits | None = None,
) -> Runner:
    """The runner of the built-in tool ``name``; ``KeyError`` for another name.

    Each runner's module is imported here, when its tool is first wanted, for start-up
    cost alone: a run of ``echo`` steps does not load processes, SQLite and HTTP
    (``forge.toolbox`` asks for one tool at a time; tests/unit/cli/test_startup_imports.py).
    """
    match name:
        case _ if name in BASIC_TOOLS:
            return BasicRunner()
        case "shell":
            from forge.runners.sandbox import Sandbox
            from forge.runners.shell import ShellRunner

            return ShellRunner(Sandbox(sandbox, limits=limits))
        case "http_request":
            from forge.runners.http import HttpRunner

            return HttpRunner(allowed_hosts)
        case "file_read" | "file_write":
            from forge.runners.files import FileReadRunner, FileWriteRunner

            return FileReadRunner() if name == "file_read" else FileWriteRunner()
        case "file_search":
            from forge.runners.search import FileSearchRunner

            return FileSearchRunner()
        case "sql_read":
            from forge.runners.sql import SqlReadRunner

            return SqlReadRunner()
    raise KeyError(name)


def builtin_runners(
    *,
    allowed_hosts: HostAllowList | Iterable[str] = (),
    shell: ShellRunner | None = None,
    sandbox: SandboxMode = "bwrap",
    limits: Limits | None = None,
) -> dict[str, Runner]:
    """Tool name to runner. ``http_request`` reaches only ``allowed_hosts`` (none by
    default); ``shell`` defaults to a ``ShellRunner`` in a ``Sandbox(sandbox, limits)``."""
    runners: dict[str, Runner] = dict.fromkeys(BASIC_TOOLS, BasicRunner())
    if shell is not None:
        runners["shell"] = shell
    for name in BUILTIN_RUNNER_TOOLS:
        if name not in runners:
            runners[name] = builtin_runner(
                name, allowed_hosts=allowed_hosts, sandbox=sandbox, limits=limits
            )
    return runners
