"""``forge mcp --url URL``: Forge's MCP tools over stdio, for an agent that starts its
MCP servers as commands (Claude Desktop, IDEs, the SDK's ``stdio_client``).

The tools call Forge's REST API at ``URL`` as the user of the token in the environment
variable ``FORGE_API_TOKEN``. The token is never a flag, so it stays out of process
lists and shell histories. Standard output carries the protocol alone; logs go to
standard error.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcp.server.mcpserver import Context

from forge.client import AsyncForgeClient
from forge.mcp_server.tools import build_server

__all__ = ["TOKEN_VARIABLE", "URL_VARIABLE", "serve", "token_from_environment"]

TOKEN_VARIABLE = "FORGE_API_TOKEN"
URL_VARIABLE = "FORGE_URL"


def token_from_environment() -> str:
    """The API token of ``FORGE_API_TOKEN``; ValueError naming it when it is unset."""
    token = os.environ.get(TOKEN_VARIABLE, "").strip()
    if not token:
        raise ValueError(
            f"set {TOKEN_VARIABLE} to an API token of the Forge user the agent acts as "
            "(manage.py forge_user NAME --role author --role operator --token)"
        )
    return token


def serve(client: AsyncForgeClient) -> None:
    """Serve the tools over this process's stdin and stdout until the agent leaves, every
    call going through ``client``; closes it."""

    async def main() -> None:
        async with client:

            @asynccontextmanager
            async def client_for(ctx: Context[Any, Any]) -> AsyncIterator[AsyncForgeClient]:
                yield client  # one client, one connection pool, for the whole session

            await build_server(client_for).run_stdio_async()

    anyio.run(main)
