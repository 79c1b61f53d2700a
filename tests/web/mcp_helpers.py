"""Drive ``/mcp`` in-process with the MCP SDK's own client: ``ClientSession`` over its
streamable HTTP transport, on an httpx2 transport into a fresh ``McpEndpoint`` whose
calls go into Django. ``call(token, tool, arguments)`` is one whole MCP conversation;
``conversation(token, talk)`` runs ``talk(session)`` in one.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
from django.core.asgi import get_asgi_application
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from forge_web.mcp import McpEndpoint

CLIENT = ("203.0.113.9", 50000)


@asynccontextmanager
async def session(
    token: str, host: str = "testserver", path: str = "/mcp", django: Any = None
) -> AsyncIterator[ClientSession]:
    """An initialized MCP client session with ``path`` (``/mcp``, or the gateway's
    ``/mcp/gateway``) of a fresh endpoint, whose requests into Django go to ``django``
    (Django's ASGI application unless given one, such as a spy in front of it)."""
    endpoint = McpEndpoint(django or get_asgi_application())
    transport = httpx2.ASGITransport(app=endpoint, client=CLIENT)
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        endpoint.lifespan(),
        httpx2.AsyncClient(transport=transport, base_url=f"http://{host}", headers=headers) as http,
        streamable_http_client(f"http://{host}{path}", http_client=http) as (read, write),
        ClientSession(read, write) as client,
    ):
        await client.initialize()
        yield client


def conversation[T](
    token: str, talk: Callable[[ClientSession], Awaitable[T]], path: str = "/mcp"
) -> T:
    async def main() -> T:
        async with session(token, path=path) as client:
            return await talk(client)

    return anyio.run(main)


def call(token: str, tool: str, arguments: dict[str, Any]) -> CallToolResult:
    return conversation(token, lambda client: client.call_tool(tool, arguments))


def answer(result: CallToolResult) -> dict[str, Any]:
    """The tool's JSON answer (structured content, which is also its text)."""
    assert result.structured_content is not None, result.content
    assert json.loads(result.content[0].text) == result.structured_content  # type: ignore[union-attr]
    return result.structured_content


def initialized(token: str, path: str = "/mcp") -> Any:
    """What the endpoint at ``path`` answers ``initialize`` with (``server_info``,
    ``capabilities``)."""
    endpoint = McpEndpoint(get_asgi_application())

    async def main() -> Any:
        transport = httpx2.ASGITransport(app=endpoint, client=CLIENT)
        headers = {"Authorization": f"Bearer {token}"}
        async with (
            endpoint.lifespan(),
            httpx2.AsyncClient(
                transport=transport, base_url="http://testserver", headers=headers
            ) as http,
            streamable_http_client(f"http://testserver{path}", http_client=http) as (read, write),
            ClientSession(read, write) as client,
        ):
            return await client.initialize()

    return anyio.run(main)


def raw_post(
    endpoint: McpEndpoint, headers: dict[str, str], host: str = "testserver", path: str = "/mcp"
) -> Any:
    """One JSON-RPC ``tools/list`` POST to ``path`` (/mcp), outside any MCP client:
    (status, headers, JSON body)."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}

    async def post() -> httpx2.Response:
        transport = httpx2.ASGITransport(app=endpoint, client=CLIENT)
        async with httpx2.AsyncClient(transport=transport, base_url=f"http://{host}") as http:
            return await http.post(path, json=body, headers=headers)

    response = anyio.run(post)
    return response.status_code, response.headers, response.json()
