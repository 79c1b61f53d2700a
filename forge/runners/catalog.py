"""One runner for each built-in tool of SPEC section 3, ready to inject into the executor."""

from __future__ import annotations

from collections.abc import Iterable

from forge.runners.base import Runner
from forge.runners.basic import BASIC_TOOLS, BasicRunner
from forge.runners.files import FileReadRunner, FileWriteRunner
from forge.runners.http import HttpRunner
from forge.runners.sandbox import Limits, Sandbox, SandboxMode
from forge.runners.search import FileSearchRunner
from forge.runners.shell import ShellRunner
from forge.runners.sql import SqlReadRunner

__all__ = ["builtin_runners"]


def builtin_runners(
    *,
    allowed_hosts: Iterable[str] = (),
    shell: ShellRunner | None = None,
    sandbox: SandboxMode = "bwrap",
    limits: Limits | None = None,
) -> dict[str, Runner]:
    """Tool name to runner. ``http_request`` reaches only ``allowed_hosts`` (none by
    default); ``shell`` defaults to a ``ShellRunner`` in a ``Sandbox(sandbox, limits)``."""
    basic = BasicRunner()
    runners: dict[str, Runner] = dict.fromkeys(BASIC_TOOLS, basic)
    runners["shell"] = shell or ShellRunner(Sandbox(sandbox, limits=limits))
    runners["http_request"] = HttpRunner(allowed_hosts)
    runners["file_read"] = FileReadRunner()
    runners["file_write"] = FileWriteRunner()
    runners["file_search"] = FileSearchRunner()
    runners["sql_read"] = SqlReadRunner()
    return runners
