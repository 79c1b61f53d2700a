"""A connection to one configured MCP server, against a real one (the ledger server of
tests/fixtures, over stdio and over streamable HTTP): started on first use, a dead
session started again, a changed tool refused, a server that is down reported."""

from __future__ import annotations

import dataclasses

import mcp.types as mcp_types
import pytest

from forge.runners.mcp import McpToolRunner, mcp_tool_spec
from forge.runners.mcp_config import McpServerConfig
from forge.runners.mcp_connection import McpConnection
from tests.fixtures.ledger import Ledger


@pytest.fixture
def ledger(tmp_path):
    return Ledger.at(tmp_path / "ledger", rent=900, fees=40)


@pytest.fixture
def connection(ledger):
    connection = McpConnection(McpServerConfig("ledger", tuple(ledger.command)))
    yield connection
    connection.close()


def tools_of(connection):
    return {spec.name: (spec, runner) for spec, runner in connection.discover().tools}


def test_nothing_is_started_before_the_first_use(ledger, connection):
    assert ledger.starts() == 0

    tools_of(connection)

    assert ledger.starts() == 1


def test_annotations_become_side_effects_and_schemas_stay_the_servers(connection):
    tools = tools_of(connection)

    effects = {name: (s.side_effect, s.idempotent, s.risk) for name, (s, _) in tools.items()}
    assert effects == {
        "ledger.delete_entry": ("delete", False, "high"),
        "ledger.list_entries": ("read", True, "low"),
        "ledger.record_entry": ("write", True, "medium"),
    }
    assert tools["ledger.delete_entry"][0].args_schema["required"] == ["key"]


def test_a_destructive_call_reaches_the_server_and_returns_its_structured_content(
    ledger, connection, make_context
):
    spec, runner = tools_of(connection)["ledger.delete_entry"]

    outcome = runner.run(spec, {"key": "rent"}, make_context())

    assert outcome.ok
    assert outcome.output == {"deleted": "rent", "existed": True}
    assert ledger.entries() == {"fees": 40}
    assert ledger.calls() == [{"tool": "delete_entry", "args": {"key": "rent"}}]
    assert ledger.starts() == 1  # one session for discovery and the call


def test_a_tool_that_changed_on_a_live_server_is_refused_before_the_call(connection, make_context):
    spec, runner = tools_of(connection)["ledger.record_entry"]
    approved_against = dataclasses.replace(spec, description="an older text")

    outcome = runner.run(approved_against, {"key": "tax", "amount": 1}, make_context())

    assert outcome.error_code == "stale_binding"
    assert outcome.error == (
        "tool 'ledger.record_entry' of MCP server 'ledger' changed since the plan was compiled"
    )
    assert connection.stale


def test_a_server_killed_between_calls_is_started_again_for_the_next_one(
    ledger, connection, make_context
):
    spec, runner = tools_of(connection)["ledger.list_entries"]
    ledger.kill()

    outcome = runner.run(spec, {}, make_context())

    assert outcome.ok, outcome.error
    assert outcome.output == {"entries": {"rent": 900, "fees": 40}}
    assert ledger.starts() == 2
    assert connection.stale  # the toolbox lists the new session's tools before using them


def test_a_restarted_server_whose_tool_changed_is_refused_before_the_call(
    ledger, connection, make_context
):
    spec, runner = tools_of(connection)["ledger.list_entries"]
    ledger.publish_v2()  # list_entries loses its read-only annotation
    ledger.kill()

    outcome = runner.run(spec, {}, make_context())

    assert outcome.error_code == "stale_binding"
    assert outcome.error == (
        "tool 'ledger.list_entries' of MCP server 'ledger' changed since the plan was compiled "
        "(the server was restarted)"
    )
    assert ledger.calls() == []
    rediscovered = tools_of(connection)["ledger.list_entries"][0]
    assert rediscovered.side_effect == "delete"


def test_discovery_of_a_dead_session_starts_the_server_again(ledger, connection):
    tools_of(connection)
    ledger.kill()

    discovery = connection.discover()

    assert discovery.available
    assert len(discovery.tools) == 3
    assert ledger.starts() == 2


def test_a_server_that_does_not_start_is_a_discovery_error_not_an_exception(tmp_path):
    broken = McpConnection(
        McpServerConfig("broken", ("python3", "-c", "import sys; sys.exit('no such ledger')"))
    )

    discovery = broken.discover()

    assert not discovery.available
    assert discovery.tools == ()
    assert discovery.error.startswith("MCP server 'broken' did not start (")
    assert "stderr: no such ledger" in discovery.error
    assert not broken.stale  # down is the current answer: the next refresh asks again


def test_secrets_of_the_environment_are_masked_in_what_a_failed_start_says():
    config = McpServerConfig(
        "leaky",
        ("python3", "-c", "import os, sys; sys.exit('key is ' + os.environ['LEDGER_SECRET'])"),
        env=(("LEDGER_SECRET", "hunter2-very-secret"),),
    )

    discovery = McpConnection(config).discover()

    assert "hunter2-very-secret" not in discovery.error
    assert "key is [redacted]" in discovery.error


def test_streamable_http_servers_are_reached_with_their_headers(ledger, make_context):
    with ledger.over_http(key="k-2718281828") as url:
        config = McpServerConfig("remote", url=url, headers=(("X-Ledger-Key", "k-2718281828"),))
        connection = McpConnection(config)
        try:
            spec, runner = tools_of(connection)["remote.record_entry"]
            outcome = runner.run(spec, {"key": "tax", "amount": 12}, make_context())
        finally:
            connection.close()

    assert outcome.ok, outcome.error
    assert ledger.entries() == {"rent": 900, "fees": 40, "tax": 12}


def test_a_streamable_http_server_refusing_the_credentials_is_down_and_says_nothing_of_them(
    ledger,
):
    with ledger.over_http(key="k-2718281828") as url:
        config = McpServerConfig("remote", url=url, headers=(("X-Ledger-Key", "wrong-key-1"),))
        discovery = McpConnection(config, startup_timeout_s=10).discover()

    assert not discovery.available
    assert discovery.error.startswith("MCP server 'remote' did not start (")
    assert "wrong-key-1" not in discovery.error


def test_a_url_nobody_answers_at_is_down():
    discovery = McpConnection(
        McpServerConfig("nobody", url="http://127.0.0.1:9/mcp"), startup_timeout_s=10
    ).discover()

    assert not discovery.available
    assert discovery.error.startswith("MCP server 'nobody' did not start (")


def test_a_remote_tool_runner_passes_the_bound_spec_to_its_connection(make_context):
    seen = []

    class Recording:
        name = "fake"

        def call_tool(self, name, arguments, *, timeout_s, spec):
            seen.append((name, dict(arguments), spec.name))
            return mcp_types.CallToolResult(content=[], structured_content={"ok": True})

    spec = mcp_tool_spec("fake", mcp_types.Tool(name="act", input_schema={"type": "object"}))

    outcome = McpToolRunner(Recording(), "act").run(spec, {"n": 1}, make_context())

    assert outcome.output == {"ok": True}
    assert seen == [("act", {"n": 1}, "fake.act")]
