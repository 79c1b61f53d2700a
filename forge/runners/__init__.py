"""The runners: the only code in Forge that performs side effects.

``Runner`` is the port the ToolExecutor calls; ``builtin_runners`` wires one runner to
each built-in tool, ``discover_python_tools`` and ``McpConnection.discover``
(``forge.runners.mcp_connection``, imported only when MCP servers are configured) add
installed and remote ones.
"""

from forge.runners.base import Artifact, Isolation, RunContext, Runner, RunnerOutcome
from forge.runners.basic import BasicRunner
from forge.runners.catalog import builtin_runners
from forge.runners.errors import (
    DiskQuotaExceeded,
    FileTooLarge,
    HostNotAllowed,
    InvalidArguments,
    McpUnavailable,
    NotAFile,
    NotText,
    PathOutsideWorkspace,
    ResponseTooLarge,
    RunnerError,
    RunnerTimeout,
    SandboxUnavailable,
    ToolLoadFailed,
    UnsupportedTool,
    WorkspaceFileMissing,
)
from forge.runners.files import FilePreview, FileReadRunner, FileWriteRunner
from forge.runners.http import HttpRunner
from forge.runners.python import PythonTool, PythonToolRunner, discover_python_tools, python_tool
from forge.runners.sandbox import SANDBOX_MODES, Limits, Sandbox, SandboxMode
from forge.runners.search import FileSearchRunner
from forge.runners.shell import ShellRunner
from forge.runners.sql import SqlReadRunner
from forge.runners.workspace import Workspace

__all__ = [
    "SANDBOX_MODES",
    "Artifact",
    "BasicRunner",
    "DiskQuotaExceeded",
    "FilePreview",
    "FileSearchRunner",
    "FileReadRunner",
    "FileTooLarge",
    "FileWriteRunner",
    "HostNotAllowed",
    "HttpRunner",
    "InvalidArguments",
    "Isolation",
    "Limits",
    "McpUnavailable",
    "NotAFile",
    "NotText",
    "PathOutsideWorkspace",
    "PythonTool",
    "PythonToolRunner",
    "ResponseTooLarge",
    "RunContext",
    "Runner",
    "RunnerError",
    "RunnerOutcome",
    "RunnerTimeout",
    "Sandbox",
    "SandboxMode",
    "SandboxUnavailable",
    "ShellRunner",
    "SqlReadRunner",
    "ToolLoadFailed",
    "UnsupportedTool",
    "Workspace",
    "WorkspaceFileMissing",
    "builtin_runners",
    "discover_python_tools",
    "python_tool",
]
