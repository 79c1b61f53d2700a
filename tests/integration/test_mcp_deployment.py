"""An MCP server configured through FORGE_MCP_SERVERS in a real deployment: the web
process compiles against it, a separate worker process calls it, and its destructive
tool waits for a person, who approves exactly what the preview showed. SQLite only: the
processes are what is tested here, not the database."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fixtures.ledger import Ledger, mcp_servers_file

from .deployment import Deployment, wait_for

pytestmark = pytest.mark.slow

PLAN = """
goal: Close the rent account in the ledger
steps:
  - {id: look, description: List the ledger entries, tool: ledger.list_entries}
  - {id: drop, description: Delete the rent entry from the ledger, tool: ledger.delete_entry,
     args: {key: rent}, depends_on: [look]}
"""


@pytest.fixture
def deployed(tmp_path, monkeypatch) -> Iterator[tuple[Deployment, Ledger]]:
    ledger = Ledger.at(tmp_path / "ledger", rent=900, fees=40)
    policy = tmp_path / "policy.yaml"
    # The default policy's scopes (the demo plans use them) and the ledger server's.
    scopes = ["compute", "file_read", "file_write", "shell", "http", "database_read", "mcp.ledger"]
    policy.write_text("allow: {" + ", ".join(f"{s}: ['*']" for s in scopes) + "}\n")
    servers = mcp_servers_file(tmp_path / "mcp.json", ledger=ledger.entry())
    monkeypatch.setenv("FORGE_MCP_SERVERS", str(servers))
    monkeypatch.setenv("FORGE_POLICY", str(policy))
    running = Deployment("sqlite", tmp_path / "deployment")
    running.root.mkdir()
    try:
        yield running.start(), ledger
    finally:
        running.stop()
        print(running.logs())


def test_a_destructive_mcp_step_runs_on_a_worker_process_after_a_person_approves(deployed):
    deployment, ledger = deployed
    tools = {tool["name"]: tool for tool in deployment.api("ada", "GET", "/tools")["items"]}
    assert tools["ledger.delete_entry"]["side_effect"] == "delete"

    run_id = deployment.start_run(*deployment.approved_plan("Ledger", PLAN))
    waiting = deployment.wait_status(run_id, "awaiting_approval")

    drop = {step["step_id"]: step for step in waiting["steps"]}["drop"]
    assert drop["preview"]["summary"] == "ledger.delete_entry (delete)"
    assert ledger.calls() == [{"tool": "list_entries", "args": {}}]
    approval = {"comment": "rent is settled", "preview_hash": drop["preview"]["hash"]}
    deployment.api("grace", "POST", f"/runs/{run_id}/steps/drop/approve", approval)
    done = deployment.wait_status(run_id, "succeeded", "failed", "needs_replan")

    assert done["status"] == "succeeded", deployment.logs()
    assert wait_for(lambda: ledger.entries() == {"fees": 40})
    # One session each for forge_demo's compiles, the web process and the worker, kept
    # open across calls: none is started per call.
    assert ledger.starts() == 3
