"""The runners: the only code in Forge that performs side effects.

``Runner`` is the port the ToolExecutor calls; ``builtin_runners`` wires one runner to
each built-in tool, ``discover_python_tools`` and ``McpConnection.discover``
(``forge.runners.mcp_connection``, imported only when MCP servers are configured) add
installed and remote ones.
"""

from typing import TYPE_CHECKING

from forge.lazy_exports import lazy_exports

# Each name is imported from its module on first use (PEP 562), so that importing one
# runner module, or this package for one name, does not import them all (the HTTP
# runner's httpx alone is most of a short command's start-up).
if TYPE_CHECKING:
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
    from forge.runners.python import (
        PythonTool,
        PythonToolRunner,
        discover_python_tools,
        python_tool,
    )
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

_WHERE = {
    "Artifact": "forge.runners.base",
    "Isolation": "forge.runners.base",
    "RunContext": "forge.runners.base",
    "Runner": "forge.runners.base",
    "RunnerOutcome": "forge.runners.base",
    "BasicRunner": "forge.runners.basic",
    "builtin_runners": "forge.runners.catalog",
    "DiskQuotaExceeded": "forge.runners.errors",
    "FileTooLarge": "forge.runners.errors",
    "HostNotAllowed": "forge.runners.errors",
    "InvalidArguments": "forge.runners.errors",
    "McpUnavailable": "forge.runners.errors",
    "NotAFile": "forge.runners.errors",
    "NotText": "forge.runners.errors",
    "PathOutsideWorkspace": "forge.runners.errors",
    "ResponseTooLarge": "forge.runners.errors",
    "RunnerError": "forge.runners.errors",
    "RunnerTimeout": "forge.runners.errors",
    "SandboxUnavailable": "forge.runners.errors",
    "ToolLoadFailed": "forge.runners.errors",
    "UnsupportedTool": "forge.runners.errors",
    "WorkspaceFileMissing": "forge.runners.errors",
    "FilePreview": "forge.runners.files",
    "FileReadRunner": "forge.runners.files",
    "FileWriteRunner": "forge.runners.files",
    "HttpRunner": "forge.runners.http",
    "PythonTool": "forge.runners.python",
    "PythonToolRunner": "forge.runners.python",
    "discover_python_tools": "forge.runners.python",
    "python_tool": "forge.runners.python",
    "SANDBOX_MODES": "forge.runners.sandbox",
    "Limits": "forge.runners.sandbox",
    "Sandbox": "forge.runners.sandbox",
    "SandboxMode": "forge.runners.sandbox",
    "FileSearchRunner": "forge.runners.search",
    "ShellRunner": "forge.runners.shell",
    "SqlReadRunner": "forge.runners.sql",
    "Workspace": "forge.runners.workspace",
}

__getattr__ = lazy_exports(__name__, _WHERE)
