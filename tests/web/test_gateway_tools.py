"""The gateway's endpoint, /mcp/gateway (SPEC section 11): the MCP SDK's own client, as the
agent, lists the tools of the real MCP servers of FORGE_MCP_SERVERS (the tests' ledger
server and PyPI's mcp-server-time, each started as a process) under the catalogue's names,
with their annotations, input schemas and output schemas; the endpoint takes the same
bearer tokens as /mcp and says Forge's version."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.asgi import get_asgi_application
from mcp import MCPError

from accounts.roles import refusal
from forge.version import forge_version
from forge_web.mcp import McpEndpoint
from plans import compilation
from tests.fixtures.ledger import TIME_SERVER, Ledger

from .mcp_helpers import conversation, initialized, raw_post
from .mcp_servers import GONE, deploy

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def servers(settings, tmp_path):
    """The ledger server and mcp-server-time, as ``ledger`` and ``time``, and ``gone``."""
    ledger = Ledger.at(tmp_path / "ledger", rent=900, fees=40)
    time = {"command": TIME_SERVER[0], "args": TIME_SERVER[1:]}
    deploy(settings, tmp_path, ledger=ledger.entry(), time=time, gone=GONE)
    yield ledger
    compilation.toolbox().close()


def listed(token: str) -> dict[str, Any]:
    """The gateway's tools by name, as the MCP SDK's client session lists them."""

    async def talk(client: Any) -> Any:
        return await client.list_tools()

    tools = conversation(token, talk, path="/mcp/gateway")
    return {tool.name: tool for tool in tools.tools}


def test_the_gateway_lists_every_upstream_tool_under_its_catalogue_name(servers, viewer, token_for):
    tools = listed(token_for(viewer))

    ledger = {name for name in tools if name.startswith("ledger.")}
    timed = {name for name in tools if name.startswith("time.")}
    assert ledger == {"ledger.delete_entry", "ledger.list_entries", "ledger.record_entry"}
    assert timed == {"time.convert_time", "time.get_current_time"}
    # Forge's own built-ins are the workers', never offered to the agent
    assert set(tools) == ledger | timed


def test_each_tool_keeps_its_annotations_input_schema_and_output_schema(servers, viewer, token_for):
    tools = listed(token_for(viewer))

    delete = tools["ledger.delete_entry"]
    assert delete.description == "Delete an entry for good."
    assert delete.annotations is not None
    assert delete.annotations.model_dump(by_alias=True, exclude_none=True) == {
        "destructiveHint": True,
        "openWorldHint": False,
    }
    assert delete.input_schema == {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {"key": {"title": "Key", "type": "string"}},
        "required": ["key"],
        "title": "delete_entryArguments",
    }
    assert delete.output_schema == {
        "additionalProperties": True,
        "title": "delete_entryDictOutput",
        "type": "object",
    }
    reading = tools["ledger.list_entries"].annotations
    assert reading is not None and reading.read_only_hint is True
    clock = tools["time.get_current_time"]
    assert clock.annotations is not None and clock.annotations.read_only_hint is True
    assert clock.output_schema is not None
    assert "timezone" in clock.input_schema["properties"]


def test_the_rest_catalogue_says_how_forge_reads_each_tool(servers, viewer, api_client):
    answer = api_client(viewer).get("/api/v1/gateway/tools")

    assert answer.status_code == 200
    by_name = {tool["name"]: tool for tool in answer.json()}
    assert {
        name: (tool["server"], tool["remote_name"], tool["side_effect"], tool["idempotent"])
        for name, tool in by_name.items()
        if name.startswith("ledger.")
    } == {
        "ledger.delete_entry": ("ledger", "delete_entry", "delete", False),
        "ledger.list_entries": ("ledger", "list_entries", "read", True),
        "ledger.record_entry": ("ledger", "record_entry", "write", True),
    }


def test_the_gateway_takes_a_bearer_token_and_nothing_else(servers):
    headers = {"Accept": "application/json, text/event-stream"}

    status, headers, body = raw_post(
        McpEndpoint(get_asgi_application()), headers, path="/mcp/gateway"
    )

    assert status == 401
    assert headers["www-authenticate"] == (
        'Bearer realm="forge", resource_metadata='
        '"http://testserver/.well-known/oauth-protected-resource/mcp/gateway"'
    )
    assert body["code"] == "not_authenticated"


def test_an_auditor_who_may_not_read_tools_is_refused_the_list(servers, make_user, token_for):
    auditor = make_user("audrey", "auditor")

    async def talk(client: Any) -> MCPError:
        with pytest.raises(MCPError) as refused:
            await client.list_tools()
        return refused.value

    refused = conversation(token_for(auditor), talk, path="/mcp/gateway")

    assert refused.message == refusal("tool.view")
    assert refused.data == {
        "status": 403,
        "code": "permission_denied",
        "detail": refusal("tool.view"),
    }


def test_the_gateway_says_forges_version_and_offers_tools_only(servers, viewer, token_for):
    answer = initialized(token_for(viewer), "/mcp/gateway")

    assert (answer.server_info.name, answer.server_info.version) == (
        "forge-gateway",
        forge_version(),
    )
    assert forge_version() == "0.1.0"
    capabilities = answer.capabilities
    assert capabilities.tools is not None
    assert (capabilities.prompts, capabilities.resources) == (None, None)
