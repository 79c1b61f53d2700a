"""``forge compile|export|run --config FILE``: the MCP servers of the web's
``FORGE_MCP_SERVERS`` file, in the CLI, with a real server (the ledger of tests/fixtures)."""

from __future__ import annotations

import json
import sys

import pytest

from tests.fixtures.ledger import Ledger, mcp_servers_file

from .test_cli import forge, write

PLAN = """
goal: Close the rent account in the ledger
steps:
  - id: look
    description: List the ledger entries before anything changes
    tool: ledger.list_entries
  - id: drop
    description: Delete the rent entry from the ledger
    tool: ledger.delete_entry
    args: {key: rent}
    depends_on: [look]
"""
POLICY = "allow: {mcp.ledger: ['*']}\n"


@pytest.fixture
def ledger(tmp_path):
    return Ledger.at(tmp_path / "ledger", rent=900, fees=40)


@pytest.fixture
def files(tmp_path, ledger):
    config = mcp_servers_file(tmp_path / "mcp.json", ledger=ledger.entry())
    plan = write(tmp_path / "plan.yaml", PLAN)
    policy = write(tmp_path / "policy.yaml", POLICY)
    return config, plan, policy


def test_compile_reads_the_servers_tools_and_says_the_destructive_step_will_wait(files, ledger):
    config, plan, policy = files

    result = forge("compile", str(plan), "--config", str(config), "--policy", str(policy))

    assert result.returncode == 0, result.stdout + result.stderr
    assert (
        f"{plan}: info[approval_required] step 'drop' will wait for approval: tool "
        "'ledger.delete_entry' is high risk; delete side effects always need a person's approval"
    ) in result.stdout
    assert ledger.calls() == []  # compiling lists tools, it calls none


def test_compile_reads_the_file_named_by_forge_mcp_servers_by_default(files, monkeypatch):
    config, plan, policy = files
    monkeypatch.setenv("FORGE_MCP_SERVERS", str(config))

    result = forge("compile", str(plan), "--policy", str(policy), "--json")

    assert result.returncode == 0, result.stdout + result.stderr
    graph = json.loads(result.stdout)["graph"]
    assert [node["tool"] for node in graph["nodes"]] == [
        "ledger.list_entries",
        "ledger.delete_entry",
    ]


def test_a_server_that_does_not_answer_is_named_and_its_steps_do_not_compile(tmp_path, files):
    _, plan, policy = files
    broken = {"command": sys.executable, "args": ["-c", "raise SystemExit('ledger offline')"]}
    config = mcp_servers_file(tmp_path / "broken.json", ledger=broken)

    result = forge("compile", str(plan), "--config", str(config), "--policy", str(policy))

    assert result.returncode == 1
    assert "forge: warning: MCP server 'ledger' is not available: MCP server 'ledger' did not " in (
        result.stderr
    )
    assert "ledger offline" in result.stderr
    assert (
        f"{plan}: error[tool_unavailable] step 'look' uses tool 'ledger.list_entries' of MCP "
        in (result.stdout)
    )
    assert "Traceback" not in result.stderr


def test_a_malformed_servers_file_is_unreadable_input(tmp_path, files):
    _, plan, _ = files
    config = write(tmp_path / "mcp.json", '{"mcpServers": {"ledger": {"command": "x", "env": []}}}')

    for command in ("compile", "export", "run"):
        extra = ("--to", "json") if command == "export" else ()
        result = forge(command, str(plan), "--config", str(config), *extra)

        assert result.returncode == 2, (command, result.stderr)
        assert result.stderr == (
            f"forge: MCP servers file {config}: server 'ledger': env must map names to strings "
            "[invalid_mcp_config]\n"
        )


def test_export_checks_the_file_but_starts_no_server(files, ledger):
    config, plan, _ = files

    result = forge("export", str(plan), "--config", str(config), "--to", "mermaid")

    assert result.returncode == 0, result.stderr
    assert "flowchart TD\n" in result.stdout
    assert ledger.starts() == 0


def test_run_without_a_person_waits_and_nothing_reaches_the_server(files, ledger, tmp_path):
    config, plan, policy = files

    result = forge("run", str(plan), "--config", str(config), "--policy", str(policy),
                   "--workspace", str(tmp_path / "ws"))  # fmt: skip

    assert result.returncode == 4, result.stdout + result.stderr
    assert "waiting for a person: version 1 is not approved" in result.stdout
    assert ledger.calls() == []
    assert ledger.entries() == {"rent": 900, "fees": 40}


def test_run_with_an_approver_shows_the_destructive_call_before_it_is_made(files, ledger, tmp_path):
    config, plan, policy = files

    result = forge("run", str(plan), "--config", str(config), "--policy", str(policy),
                   "--workspace", str(tmp_path / "ws"), "--approve-as", "carol")  # fmt: skip

    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "approved step drop as carol:" in out
    assert "    MCP server 'ledger', tool 'delete_entry'" in out
    assert "    annotations: destructiveHint=True, openWorldHint=False" in out
    assert "    read as: side effect delete, risk high, not idempotent" in out
    assert out.index("approved step drop as carol:") < out.index("  ok        drop")
    assert ledger.calls() == [
        {"tool": "list_entries", "args": {}},
        {"tool": "delete_entry", "args": {"key": "rent"}},
    ]
    assert ledger.entries() == {"fees": 40}


def test_mcp_flags_add_servers_to_the_file_s_and_a_name_may_not_repeat(files, tmp_path):
    config, plan, policy = files

    result = forge("run", str(plan), "--config", str(config), "--policy", str(policy),
                   "--mcp", f"ledger={sys.executable} -m mcp_server_time")  # fmt: skip

    assert result.returncode == 2
    assert result.stderr == ("forge: MCP server name(s) given twice: ledger [invalid_mcp_config]\n")
