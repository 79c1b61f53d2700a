"""A deployment with MCP servers for web tests: ``FORGE_MCP_SERVERS`` naming the ledger
server of tests/fixtures (and others), a policy allowing their tools, and this process's
toolbox closed afterwards so no server outlives its test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from forge.plan import from_data
from plans import compilation
from plans import services as plan_services
from tests.fixtures.ledger import Ledger, mcp_servers_file

POLICY = (
    "allow: {compute: ['*'], file_read: ['*'], file_write: ['*'], mcp.ledger: ['*'],"
    " mcp.time: ['*'], mcp.gone: ['*']}\n"
)
GONE = {"command": "python3", "args": ["-c", "raise SystemExit('the gone server is offline')"]}


def deploy(settings: Any, tmp_path: Path, **servers: dict[str, Any]) -> Path:
    """Point the settings at an ``mcpServers`` file with ``servers``; returns the file."""
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    settings.FORGE_POLICY = str(policy)
    path = mcp_servers_file(tmp_path / "mcp.json", **servers)
    settings.FORGE_MCP_SERVERS = str(path)
    return path


def deploy_ledger(settings: Any, tmp_path: Path) -> Iterator[Ledger]:
    """For a ``ledger`` fixture: the ledger server (rent 900, fees 40) as ``ledger``, and
    ``gone``, which never starts, configured through FORGE_MCP_SERVERS."""
    server = Ledger.at(tmp_path / "ledger", rent=900, fees=40)
    deploy(settings, tmp_path, ledger=server.entry(), gone=GONE)
    yield server
    compilation.toolbox().close()


def approved(author: Any, approver: Any, steps: list[dict[str, Any]], **fields: Any) -> Any:
    data = {"goal": "Close the rent account in the ledger", **fields, "steps": steps}
    version = plan_services.create_plan(author, "Ledger", from_data(data))
    assert not version.has_errors, version.diagnostics
    plan_services.approve(version, approver, "looks right")
    version.refresh_from_db()
    return version


LOOK = {"id": "look", "description": "List the ledger entries", "tool": "ledger.list_entries"}
COPY = {
    "id": "copy",
    "description": "Record the checked rent under its own key",
    "tool": "ledger.record_entry",
    "args": {"key": "rent_checked", "amount": {"$from": "look", "path": "entries.rent"}},
    "depends_on": ["look"],
}
DROP = {
    "id": "drop",
    "description": "Delete the rent entry from the ledger",
    "tool": "ledger.delete_entry",
    "args": {"key": "rent"},
    "depends_on": ["look"],
}
