"""System checks of the deployment's toolbox: ``manage.py check`` (and every command that
runs checks, the worker's and the server's start included) reads the ``FORGE_MCP_SERVERS``
file and reports a malformed one as ``forge.E001``, before any server is started, and
the ``FORGE_APPROVAL_RULES`` file, a bad one as ``forge.E002`` with its line and field. Servers
that do not answer are not checked here: that is a state, reported by ``GET
/api/v1/tools/servers`` and by the compiler (``tool_unavailable``), not a configuration
error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import Group
from django.core.checks import CheckMessage
from django.core.checks import Error as CheckError
from django.db import DatabaseError

from forge.rules import RulesInvalid
from forge.rules.reader import read_rules
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


def approval_rules_check(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """``forge.E002``: the ``FORGE_APPROVAL_RULES`` file cannot be read, is not a valid
    ``forge.rules/v1`` document (its line and field named), or names a team that does not
    exist (when the database can say)."""
    path = str(getattr(settings, "FORGE_APPROVAL_RULES", "") or "")
    if not path:
        return []
    try:
        text = Path(path).read_bytes()
    except OSError as exc:
        return [_rules_error(f"cannot read {path}: {exc.strerror or exc}")]
    try:
        read_rules(text)
        try:
            teams = set(Group.objects.values_list("name", flat=True))
        except DatabaseError:  # not migrated yet, or away: the teams are checked later
            return []
        read_rules(text, teams=teams)
    except RulesInvalid as exc:
        return [_rules_error(f"{path}: {exc} [{exc.code}]")]
    return []


def _rules_error(message: str) -> CheckMessage:
    return CheckError(
        f"FORGE_APPROVAL_RULES: {message}",
        hint="The file is a forge.rules/v1 document (docs/configuration.md, approval rules); "
        "teams are created with manage.py forge_user NAME --team T or the Teams page.",
        id="forge.E002",
    )
