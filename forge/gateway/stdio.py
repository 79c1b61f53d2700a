"""``forge gateway --url URL``: the gateway over stdio, for an agent that starts its MCP
servers as commands (Claude Desktop, IDEs, the SDK's ``stdio_client``).

It lists and calls the upstream tools through the Forge site at ``URL``
(``/api/v1/gateway/...``) as the user of the token in ``FORGE_API_TOKEN``, exactly as
``/mcp/gateway`` does in the web process; the MCP servers themselves run beside the web
process, never here. Standard output carries the protocol alone; each line is read
strictly first, as ``forge mcp`` reads it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcp.server.context import ServerRequestContext

from forge.client import AsyncForgeClient
from forge.gateway.server import build_gateway
from forge.mcp_server.stdio import serve_lowlevel_stdio

__all__ = ["serve"]


def serve(client: AsyncForgeClient) -> None:
    """Serve the gateway over this process's stdin and stdout until the agent leaves,
    every REST call through ``client``; closes it."""

    async def main() -> None:
        async with client:

            @asynccontextmanager
            async def client_for(ctx: ServerRequestContext[Any]) -> AsyncIterator[AsyncForgeClient]:
                yield client  # one client, one connection pool, for the whole session

            await serve_lowlevel_stdio(build_gateway(client_for))

    anyio.run(main)
