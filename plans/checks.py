"""System checks of the deployment's toolbox: ``manage.py check`` (and every command that
runs checks, the worker's and the server's start included) reads the ``FORGE_MCP_SERVERS``
file and reports a malformed one as ``forge.E001``, before any server is started. Servers
that do not answer are not checked here: that is a state, reported by ``GET
/api/v1/tools/servers`` and by the compiler (``tool_unavailable``), not a configuration
error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.checks import CheckMessage
from django.core.checks import Error as CheckError

from forge.runners.mcp_config import McpConfigError, load_mcp_servers


def mcp_servers_check(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    path = str(getattr(settings, "FORGE_MCP_SERVERS", "") or "")
    if not path:
        return []
    try:
        load_mcp_servers(Path(path))
    except McpConfigError as exc:
        return [
            CheckError(
                f"FORGE_MCP_SERVERS: {exc}",
                hint='The file is {"mcpServers": {NAME: {"command", "args", "env"} or '
                '{"url", "headers"}}} (docs/configuration.md).',
                id="forge.E001",
            )
        ]
    return []
