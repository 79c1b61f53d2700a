"""MCP tools from the real ``mcp-server-time`` server over stdio, and how annotations
become side effects."""

from __future__ import annotations

import sys

import mcp.types as mcp_types
import pytest

from forge.runners import McpUnavailable
from forge.runners.mcp import McpServer, McpToolRunner, mcp_tool_spec
from forge.runners.mcp_config import McpServerConfig
from forge.runners.mcp_connection import McpConnection
from forge.tools import ToolRegistry

TIME_SERVER = [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"]


@pytest.fixture(scope="module")
def time_server():
    connection = McpConnection(McpServerConfig("time", tuple(TIME_SERVER)))
    yield connection
    connection.close()


@pytest.fixture(scope="module")
def time_tools(time_server):
    return {spec.name: (spec, runner) for spec, runner in time_server.discover().tools}


def test_the_server_s_tools_become_prefixed_specs_with_their_input_schemas(time_tools):
    assert sorted(time_tools) == ["time.convert_time", "time.get_current_time"]
    spec, _ = time_tools["time.get_current_time"]
    assert spec.args_schema["required"] == ["timezone"]
    assert spec.permission_scope == "mcp.time"
    assert spec.source == "mcp:time"
    ToolRegistry(spec for spec, _ in time_tools.values())  # valid ids and schemas


def test_read_only_annotations_make_a_read_only_idempotent_low_risk_tool(time_tools):
    spec, _ = time_tools["time.convert_time"]

    assert (spec.side_effect, spec.idempotent, spec.risk) == ("read", True, "low")


def test_get_current_time_returns_the_structured_content(time_tools, make_context):
    spec, runner = time_tools["time.get_current_time"]

    outcome = runner.run(spec, {"timezone": "Europe/Paris"}, make_context())

    assert outcome.ok
    assert outcome.output["timezone"] == "Europe/Paris"
    assert set(outcome.output) == {"timezone", "datetime", "day_of_week", "is_dst"}


def test_convert_time_converts_between_timezones(time_tools, make_context):
    spec, runner = time_tools["time.convert_time"]
    args = {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}

    outcome = runner.run(spec, args, make_context())

    assert outcome.output["target"]["datetime"].endswith("T21:00:00+09:00")
    assert outcome.output["time_difference"] == "+9.0h"


def test_a_tool_error_fails_the_step_with_the_server_s_message(time_tools, make_context):
    spec, runner = time_tools["time.convert_time"]
    args = {"source_timezone": "UTC", "time": "25:00", "target_timezone": "Asia/Tokyo"}

    outcome = runner.run(spec, args, make_context())

    assert outcome.error_code == "tool_failed"
    assert "Invalid time format" in outcome.error


def test_a_remote_tool_the_server_does_not_list_is_never_called(time_server, make_context):
    spec = mcp_tool_spec("time", mcp_types.Tool(name="no_such_tool", input_schema={}))

    outcome = McpToolRunner(time_server, "no_such_tool").run(spec, {}, make_context())

    assert outcome.error_code == "stale_binding"
    assert outcome.error == (
        "tool 'time.no_such_tool' of MCP server 'time' changed since the plan was compiled"
    )


def test_a_tool_without_annotations_is_read_the_cautious_way():
    tool = mcp_types.Tool(name="send", input_schema={"type": "object"})

    spec = mcp_tool_spec("mail", tool)

    # MCP's defaults: not read-only, destructive, open world, not idempotent
    assert (spec.side_effect, spec.idempotent, spec.risk) == ("delete", False, "high")


@pytest.mark.parametrize(
    ("hints", "effect"),
    [
        ({"read_only_hint": True}, "read"),
        ({"destructive_hint": True, "open_world_hint": False}, "delete"),
        ({"destructive_hint": False, "open_world_hint": True}, "external"),
        ({"destructive_hint": False}, "external"),
        ({"destructive_hint": False, "open_world_hint": False}, "write"),
    ],
)
def test_annotations_map_onto_side_effect_classes(hints, effect):
    annotations = mcp_types.ToolAnnotations(**hints)
    tool = mcp_types.Tool(name="act", input_schema={"type": "object"}, annotations=annotations)

    assert mcp_tool_spec("srv", tool).side_effect == effect


def test_a_closed_world_non_destructive_tool_writes_at_medium_risk():
    hints = mcp_types.ToolAnnotations(
        destructive_hint=False, open_world_hint=False, idempotent_hint=True
    )
    tool = mcp_types.Tool(name="remember", input_schema={"type": "object"}, annotations=hints)

    spec = mcp_tool_spec("memory", tool)

    assert (spec.side_effect, spec.idempotent, spec.risk) == ("write", True, "medium")


def test_remote_names_become_valid_distinct_tool_ids():
    long_a = mcp_tool_spec("srv", mcp_types.Tool(name="x" * 80 + "a", input_schema={}))
    long_b = mcp_tool_spec("srv", mcp_types.Tool(name="x" * 80 + "b", input_schema={}))
    odd = mcp_tool_spec("srv", mcp_types.Tool(name="search/web query", input_schema={}))

    assert odd.name == "srv.search_web_query"
    assert len(long_a.name) == 64 and long_a.name != long_b.name


def test_a_server_that_cannot_start_is_reported_with_its_stderr():
    command = [sys.executable, "-m", "mcp_server_time", "--local-timezone", "Nowhere/City"]

    with pytest.raises(McpUnavailable) as caught:
        McpServer("broken", command, startup_timeout_s=15)

    assert caught.value.code == "mcp_unavailable"
    assert "invalid --local-timezone 'Nowhere/City'" in str(caught.value)


def test_a_server_that_cannot_be_started_answers_unavailable(make_context):
    spec = mcp_tool_spec("gone", mcp_types.Tool(name="act", input_schema={"type": "object"}))
    missing = McpConnection(McpServerConfig("gone", ("/nonexistent/mcp-server",)))

    outcome = McpToolRunner(missing, "act").run(spec, {}, make_context())

    assert outcome.error_code == "mcp_unavailable"
    assert "MCP server 'gone' did not start" in outcome.error
