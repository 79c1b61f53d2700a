"""The ``shell`` runner: an argv list (never a shell string) run in the run's workspace.

The command runs confined by a ``Sandbox`` (bubblewrap unless the deployment opted in to
rlimits only; rlimits and an unprivileged uid always), with an environment built from an
allow list so the worker's secrets never reach it, until ``min(context.timeout_s,
args.timeout_s)``. stdout and stderr are capped and kept as artifacts; a non-zero exit
fails the step. Without a working bubblewrap the step fails with
``sandbox_unavailable`` and nothing runs. Each step gets its own temporary directory
(deleted after it) and a disk quota over that directory and its workspace's growth
together (``forge.runners.quota``): a watchdog asks it every ``WATCH_EVERY_S``, it is
measured once more after the exit, and a step over it fails with
``disk_quota_exceeded``.
"""

from __future__ import annotations

import json
import re
import shlex
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from forge.runners.base import Artifact, RunContext, RunnerOutcome
from forge.runners.errors import InvalidArguments, RunnerError, SandboxUnavailable
from forge.runners.preview import CallPreview
from forge.runners.process import Captured, Completed, run_process_group
from forge.runners.quota import DiskQuota
from forge.runners.sandbox import Sandbox
from forge.runners.workspace import Workspace
from forge.tools.spec import ToolSpec

__all__ = ["BASE_ENV", "RESERVED_ENV", "ShellRunner"]

BASE_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}
# The runner owns these: PATH decides which program argv[0] is, HOME is the workspace.
RESERVED_ENV = frozenset({"PATH", "HOME"})
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class ShellRunner:
    """Runs ``shell`` steps in ``sandbox``. Each step's temporary directory is made under
    ``scratch_root`` (default: the worker's temporary directory)."""

    def __init__(
        self,
        sandbox: Sandbox | None = None,
        *,
        max_output_bytes: int = 1 << 20,
        scratch_root: Path | None = None,
    ):
        self.sandbox = sandbox or Sandbox()
        self.max_output_bytes = max_output_bytes
        self.scratch_root = scratch_root

    def preview(self, tool: ToolSpec, args: Mapping[str, Any], context: RunContext) -> CallPreview:
        """What will run and where: argv, the environment's names (values may be
        secrets), the workspace and the isolation."""
        argv = _argv(args.get("argv"))
        names = sorted({*BASE_ENV, *_extra_env(args.get("env") or {}), "HOME"})
        timeout_s = min(context.timeout_s, float(args.get("timeout_s") or context.timeout_s))
        text = "\n".join(
            (
                f"argv: {json.dumps(list(argv), ensure_ascii=False)}",
                f"env: {', '.join(names)}",
                f"workspace: {context.workspace}",
                f"isolation: {self.sandbox.isolation}",
                f"timeout: {timeout_s:g} s",
            )
        )
        return CallPreview("shell", shlex.join(argv)[:200], text)

    def run(self, tool: ToolSpec, args: Mapping[str, Any], context: RunContext) -> RunnerOutcome:
        try:
            argv = _argv(args.get("argv"))
            env = {**BASE_ENV, **_extra_env(args.get("env") or {})}
            workspace = Workspace(context.workspace).root
        except RunnerError as error:
            return RunnerOutcome.failure(str(error), error.code, isolation=self.sandbox.isolation)
        timeout_s = min(context.timeout_s, float(args.get("timeout_s") or context.timeout_s))
        # Made and deleted by the worker; cleanup errors are ignored so that what a
        # command left behind can never fail the step after the fact.
        with tempfile.TemporaryDirectory(
            prefix="forge-step-", dir=self.scratch_root, ignore_cleanup_errors=True
        ) as scratch:
            return self._run(argv, env, workspace, Path(scratch), timeout_s)

    def _run(
        self,
        argv: tuple[str, ...],
        env: dict[str, str],
        workspace: Path,
        scratch: Path,
        timeout_s: float,
    ) -> RunnerOutcome:
        isolation = self.sandbox.isolation
        try:
            launch = self.sandbox.launch(argv, env, workspace, scratch)
            quota = DiskQuota(self.sandbox.limits.disk_bytes, workspace, scratch)
        except SandboxUnavailable as error:
            return RunnerOutcome.failure(str(error), error.code, isolation="none")
        except RunnerError as error:
            return RunnerOutcome.failure(str(error), error.code, isolation=isolation)
        try:
            completed = run_process_group(
                launch,
                timeout_s=timeout_s,
                max_output_bytes=self.max_output_bytes,
                watchdog=quota.watch,
            )
        except OSError as exc:  # only without bubblewrap: under it, env reports a bad argv[0]
            exit_code = 127 if isinstance(exc, FileNotFoundError) else 126
            message = f"cannot run {argv[0]!r}: {exc.strerror}"
            return RunnerOutcome.failure(
                message,
                "nonzero_exit",
                output={"exit_code": exit_code, "stdout": "", "stderr": message},
                exit_code=exit_code,
                isolation=isolation,
                notes=self.sandbox.notes,
            )
        # The last look: what was written since the watchdog's, or by a command that
        # finished before its first.
        quota.exceeded()
        failure, code = _verdict(completed, timeout_s, quota)
        return RunnerOutcome(
            ok=code is None,
            output={
                "exit_code": completed.exit_code,
                "stdout": _text(completed.stdout),
                "stderr": _text(completed.stderr),
            },
            error=failure,
            error_code=code,
            exit_code=completed.exit_code,
            artifacts=(
                _artifact("stdout", completed.stdout),
                _artifact("stderr", completed.stderr),
            ),
            isolation=isolation,
            notes=(
                *self.sandbox.notes,
                *completed.notes,
                *_truncation_notes(completed.stdout, completed.stderr),
            ),
        )


def _verdict(
    completed: Completed, timeout_s: float, quota: DiskQuota
) -> tuple[str | None, str | None]:
    """The error message and code of a finished command, or ``(None, None)``."""
    if quota.verdict:
        return quota.verdict, "disk_quota_exceeded"
    if completed.timed_out:
        return f"killed after the {timeout_s:g}s timeout", "timeout"
    if completed.exit_code != 0:
        return f"exit code {completed.exit_code}", "nonzero_exit"
    return None, None


def _argv(value: object) -> tuple[str, ...]:
    if not isinstance(value, list | tuple) or not value:
        raise InvalidArguments("argv must be a non-empty list of strings")
    if not all(isinstance(item, str) and "\0" not in item for item in value):
        raise InvalidArguments("argv must hold strings without NUL bytes")
    if "=" in value[0]:
        # `env -i NAME=VALUE... argv` would read it as one more variable.
        raise InvalidArguments(f"argv[0] {value[0]!r} may not contain '='")
    return tuple(value)


def _extra_env(value: object) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise InvalidArguments("env must map names to strings")
    env: dict[str, str] = {}
    for name, text in value.items():
        if not isinstance(name, str) or not _ENV_NAME.fullmatch(name):
            raise InvalidArguments(f"env name {name!r} is not a valid variable name")
        if name in RESERVED_ENV:
            raise InvalidArguments(f"env may not set {name}: the runner decides it")
        if not isinstance(text, str) or "\0" in text:
            raise InvalidArguments(f"env value of {name} must be a string without NUL bytes")
        env[name] = text
    return env


def _text(captured: Captured) -> str:
    return bytes(captured.head).decode("utf-8", errors="replace")


def _artifact(name: str, captured: Captured) -> Artifact:
    return Artifact(name, "text/plain", bytes(captured.head), truncated=captured.truncated)


def _truncation_notes(*captured: Captured) -> tuple[str, ...]:
    return tuple(
        f"{name} truncated to its first {stream.limit} of {stream.total} bytes"
        for name, stream in zip(("stdout", "stderr"), captured, strict=True)
        if stream.truncated
    )
