"""An independent MCP client as the agent (issue 29, real parts): fastmcp's ``Client``,
not the official SDK's ``ClientSession`` the other gateway tests use, speaks streamable
HTTP to /mcp/gateway with the agent's bearer token, the tests' ledger server upstream as
a process. It lists the gateway's tools with their annotations and schemas; an unbound
read passes and its answer is the ledger's; an unbound write is held (approval_pending,
the held call's id) and reaches nothing upstream."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx2
import pytest
from django.core.asgi import get_asgi_application
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport

from audit.models import AuditEvent
from forge_web.mcp import McpEndpoint
from gateway.models import HeldCall

from .mcp_helpers import CLIENT
from .mcp_servers import deploy_ledger

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def ledger(settings, tmp_path):
    settings.FORGE_GATEWAY_HOLD_SECONDS = 0  # approval_pending at once
    yield from deploy_ledger(settings, tmp_path)


@pytest.fixture
def agent(make_user: Any) -> Any:
    return make_user("agent", "operator")


def with_fastmcp[T](token: str, talk: Any) -> T:
    """``talk(client)`` in one fastmcp conversation with /mcp/gateway, over httpx2 into a
    fresh ``McpEndpoint`` in this process (no socket: the test's database is visible)."""
    endpoint = McpEndpoint(get_asgi_application())

    def http_client(**options: Any) -> httpx2.AsyncClient:
        # fastmcp passes what it wants of the client (headers, timeout, auth, redirects).
        options.setdefault("timeout", httpx2.Timeout(30.0, read=300.0))
        transport = httpx2.ASGITransport(app=endpoint, client=CLIENT)
        return httpx2.AsyncClient(transport=transport, **options)

    transport = StreamableHttpTransport(
        "http://testserver/mcp/gateway", auth=token, httpx_client_factory=http_client
    )

    async def main() -> T:
        async with endpoint.lifespan(), Client(transport) as client:
            return await talk(client)

    return anyio.run(main)


def test_fastmcp_lists_the_gateways_tools_with_annotations_and_schemas(ledger, agent, token_for):
    async def talk(client: Client) -> Any:
        return await client.list_tools()

    tools = {tool.name: tool for tool in with_fastmcp(token_for(agent), talk)}

    assert {"ledger.list_entries", "ledger.record_entry", "ledger.delete_entry"} <= set(tools)
    listed = tools["ledger.list_entries"]
    assert listed.annotations is not None and listed.annotations.read_only_hint is True
    record = tools["ledger.record_entry"]
    assert record.annotations is not None and record.annotations.read_only_hint is not True
    assert set(record.input_schema["properties"]) >= {"key", "amount"}


def test_fastmcp_an_unbound_read_passes_and_a_write_is_held(ledger, agent, token_for):
    async def talk(client: Client) -> Any:
        read = await client.call_tool("ledger.list_entries", {})
        write = await client.call_tool(
            "ledger.record_entry", {"key": "deposit", "amount": 300}, raise_on_error=False
        )
        return read, write

    read, write = with_fastmcp(token_for(agent), talk)

    assert not read.is_error
    assert read.structured_content == {"entries": {"rent": 900, "fees": 40}}
    held = HeldCall.objects.get()
    assert write.is_error
    refused = json.loads(write.content[0].text)
    assert refused["error"]["code"] == "approval_pending"
    assert refused["error"]["held_call"] == held.pk
    assert (held.status, held.tool, held.arguments) == (
        "held",
        "ledger.record_entry",
        {"key": "deposit", "amount": 300},
    )
    assert ledger.calls() == [{"tool": "list_entries", "args": {}}]  # the write never went
    assert list(
        AuditEvent.objects.filter(action__startswith="gateway.")
        .order_by("seq")
        .values_list("action", flat=True)
    ) == ["gateway.call_forwarded", "gateway.call_answered", "gateway.call_held"]
