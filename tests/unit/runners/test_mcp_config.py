"""The ``mcpServers`` file: the common shape read as is, everything else refused with
``invalid_mcp_config`` naming the server and the field, secrets kept out of sight."""

from __future__ import annotations

import json

import pytest

from forge.runners.mcp_config import (
    McpConfigError,
    McpServerConfig,
    load_mcp_servers,
    parse_mcp_servers,
)

ENV = {"DOCS_TOKEN": "tok-123456", "HOME": "/home/forge"}


def parse(servers: dict, environ: dict | None = None) -> tuple[McpServerConfig, ...]:
    return parse_mcp_servers({"mcpServers": servers}, ENV if environ is None else environ)


def refusal(servers: dict) -> str:
    with pytest.raises(McpConfigError) as caught:
        parse(servers)
    assert caught.value.code == "invalid_mcp_config"
    return caught.value.message


def test_a_claude_desktop_style_file_is_read_in_its_order():
    servers = parse(
        {
            "time": {"command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"}},
            "docs": {"url": "https://mcp.example.com/mcp", "headers": {"X-Team": "core"}},
        }
    )

    assert servers == (
        McpServerConfig("time", ("uvx", "mcp-server-time"), env=(("TZ", "UTC"),)),
        McpServerConfig("docs", url="https://mcp.example.com/mcp", headers=(("X-Team", "core"),)),
    )
    assert [server.transport for server in servers] == ["stdio", "http"]


def test_environment_references_are_expanded_with_their_defaults():
    [docs] = parse(
        {
            "docs": {
                "type": "http",
                "url": "https://${HOST:-mcp.example.com}/mcp",
                "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"},
            }
        }
    )

    assert docs.url == "https://mcp.example.com/mcp"
    assert dict(docs.headers) == {"Authorization": "Bearer tok-123456"}


def test_a_missing_variable_is_refused_by_name_without_a_value():
    message = refusal({"docs": {"url": "https://x/mcp", "headers": {"K": "${NOPE}"}}})

    assert message == "server 'docs' header K: environment variable NOPE is not set"


def test_secrets_stay_out_of_repr_and_are_listed_for_masking():
    [docs] = parse({"docs": {"url": "https://x/mcp", "headers": {"Auth": "${DOCS_TOKEN}"}}})

    assert "tok-123456" not in repr(docs)
    assert docs.secrets == ("tok-123456",)


def test_disabled_servers_and_other_top_level_keys_are_left_out():
    data = {
        "globalShortcut": "Ctrl+Space",
        "mcpServers": {"off": {"command": "x", "disabled": True}, "on": {"command": "y"}},
    }

    assert [server.name for server in parse_mcp_servers(data, ENV)] == ["on"]


@pytest.mark.parametrize(
    ("servers", "message"),
    [
        ({"a": {"command": "x", "autoApprove": ["t"]}},
         "server 'a': unknown field(s) autoApprove (Forge takes approvals from its policy, "
         "never from this file)"),
        ({"a": {"command": "x", "timeout": 5}}, "server 'a': unknown field(s) timeout"),
        ({"a": {}}, "server 'a' needs a command or a url"),
        ({"a": {"command": "x", "url": "https://x/mcp"}},
         "server 'a': a url server takes no command, args, env or cwd"),
        ({"a": {"command": "x", "headers": {}}}, "server 'a': headers are for url servers"),
        ({"a": {"type": "sse", "url": "https://x/sse"}},
         "server 'a': unknown type 'sse' (the SSE transport is not supported; use streamable "
         "HTTP)"),
        ({"a": {"type": "stdio", "url": "https://x/mcp"}},
         "server 'a': type 'stdio' does not match its fields"),
        ({"a": {"url": "ftp://x"}}, "server 'a': url must be http:// or https://"),
        ({"a": {"command": ""}}, "server 'a': command must be a non-empty string"),
        ({"a": {"command": "x", "args": "--flag"}}, "server 'a': args must be a list of strings"),
        ({"a": {"command": "x", "env": {"N": 1}}}, "server 'a': env must map names to strings"),
        ({"a": {"command": "x", "disabled": "no"}}, "server 'a': disabled must be true or false"),
        ({"a": ["x"]}, "server 'a' must be an object"),
        ({"my.server": {"command": "x"}},
         "MCP server name 'my.server' must match [A-Za-z0-9_-]{1,24} (it prefixes the ids of "
         "its tools)"),
    ],
)  # fmt: skip
def test_a_malformed_server_is_refused_naming_it_and_the_field(servers, message):
    assert refusal(servers) == message


def test_a_file_without_mcp_servers_is_refused():
    with pytest.raises(McpConfigError) as caught:
        parse_mcp_servers({"servers": {}}, ENV)

    assert caught.value.message == 'the file must be an object with an "mcpServers" object'


def test_a_file_that_is_not_json_is_refused_naming_the_file(tmp_path):
    path = tmp_path / "mcp.json"
    path.write_text("{mcpServers: }")

    with pytest.raises(McpConfigError) as caught:
        load_mcp_servers(path, ENV)

    assert caught.value.code == "invalid_mcp_config"
    assert caught.value.message.startswith(f"MCP servers file {path} is not JSON: ")


def test_a_missing_file_is_refused_naming_it(tmp_path):
    with pytest.raises(McpConfigError) as caught:
        load_mcp_servers(tmp_path / "absent.json", ENV)

    assert caught.value.message == (
        f"cannot read MCP servers file {tmp_path / 'absent.json'}: No such file or directory"
    )


def test_a_problem_inside_the_file_names_the_file_and_the_server(tmp_path):
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"a": {"command": "x", "cwd": 3}}}))

    with pytest.raises(McpConfigError) as caught:
        load_mcp_servers(path, ENV)

    assert caught.value.message == (
        f"MCP servers file {path}: server 'a': cwd must be a non-empty string"
    )


def test_the_command_line_form_still_reads_name_equals_command():
    assert McpServerConfig.parse("time=uvx mcp-server-time --local-timezone 'Europe/Paris'") == (
        McpServerConfig("time", ("uvx", "mcp-server-time", "--local-timezone", "Europe/Paris"))
    )
    with pytest.raises(McpConfigError):
        McpServerConfig.parse("just-a-command")
