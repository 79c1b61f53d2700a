"""The errors a runner reports, each with the stable ``code`` the run record keeps.

Runners raise these internally and from their set-up APIs (``Workspace.resolve``,
``discover_python_tools``, ``McpServer``); ``Runner.run`` itself turns them into a
failed ``RunnerOutcome`` carrying the same code, so the executor has one path for
every expected failure. Codes that only ever appear on outcomes (``nonzero_exit``,
``tool_failed``, ``http_status``, ``request_failed``, ``invalid_output``) have no class.
"""

from __future__ import annotations

from forge.errors import ForgeError

__all__ = [
    "DiskQuotaExceeded",
    "FileTooLarge",
    "HostNotAllowed",
    "InvalidArguments",
    "McpUnavailable",
    "NotAFile",
    "NotText",
    "PathOutsideWorkspace",
    "ResponseTooLarge",
    "RunnerError",
    "RunnerTimeout",
    "SandboxUnavailable",
    "ToolLoadFailed",
    "UnsupportedTool",
    "WorkspaceFileMissing",
]


class RunnerError(ForgeError, RuntimeError):
    """A tool call that was refused or cut short; ``code`` says which way."""

    code = "runner_error"


class PathOutsideWorkspace(RunnerError):
    code = "path_outside_workspace"


class WorkspaceFileMissing(RunnerError):
    code = "file_not_found"


class NotAFile(RunnerError):
    code = "not_a_file"


class FileTooLarge(RunnerError):
    code = "file_too_large"


class NotText(RunnerError):
    code = "not_text"


class HostNotAllowed(RunnerError):
    code = "host_not_allowed"


class ResponseTooLarge(RunnerError):
    code = "response_too_large"


class RunnerTimeout(RunnerError):
    code = "timeout"


class InvalidArguments(RunnerError):
    """Arguments the schema lets through but the runner refuses (``env`` overriding PATH)."""

    code = "invalid_args"


class UnsupportedTool(RunnerError):
    """A runner asked to run a tool it does not serve: a wiring bug in the executor."""

    code = "unsupported_tool"


class SandboxUnavailable(RunnerError):
    """Shell steps cannot run: bubblewrap is required and missing or broken."""

    code = "sandbox_unavailable"


class DiskQuotaExceeded(RunnerError):
    """A shell step wrote more than its disk quota, or its use could not be measured."""

    code = "disk_quota_exceeded"


class ToolLoadFailed(RunnerError):
    code = "tool_load_failed"


class McpUnavailable(RunnerError):
    """The MCP server could not be started, died, or broke the protocol."""

    code = "mcp_unavailable"
