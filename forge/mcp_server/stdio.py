"""``forge mcp --url URL``: Forge's MCP tools over stdio, for an agent that starts its
MCP servers as commands (Claude Desktop, IDEs, the SDK's ``stdio_client``).

The tools call Forge's REST API at ``URL`` as the user of the token in the environment
variable ``FORGE_API_TOKEN``. The token is never a flag, so it stays out of process
lists and shell histories. Standard output carries the protocol alone; logs go to
standard error.

Each message is read as every JSON Forge reads is (``json_io.parse_json``) before the
SDK reads it: a repeated key or nesting past the depth limit is answered with a JSON-RPC
parse error carrying Forge's code (``duplicate_key``, ``document_too_deep``) and never
reaches a tool, where the SDK would keep the last value or answer nothing.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from io import TextIOWrapper
from typing import Any

import anyio
from anyio.abc import ObjectSendStream
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import ErrorData, JSONRPCError

from forge.client import AsyncForgeClient
from forge.errors import PlanDocumentError
from forge.mcp_server.tools import build_server
from forge.plan import DEFAULT_LIMITS
from forge.plan.formats.json_io import parse_json

__all__ = [
    "TOKEN_VARIABLE",
    "URL_VARIABLE",
    "serve",
    "serve_lowlevel_stdio",
    "token_from_environment",
]

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

            await _serve_stdio(build_server(client_for))

    anyio.run(main)


# JSON-RPC's code for a message that cannot be read.
_PARSE_ERROR = -32700


class _StrictLines:
    """Standard input's lines, each read strictly first; a refused one is answered on
    ``answers`` (the session's write stream, known once it starts) and not passed on."""

    def __init__(self) -> None:
        stream = TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")
        self._lines = anyio.wrap_file(stream)
        self.answers: ObjectSendStream[SessionMessage] | None = None

    async def __aiter__(self) -> AsyncIterator[str]:
        async for line in self._lines:
            try:
                parse_json(line, DEFAULT_LIMITS)
            except PlanDocumentError as error:
                await self._refuse(error)
                continue
            yield line

    async def _refuse(self, error: PlanDocumentError) -> None:
        assert self.answers is not None  # the session is running: it read this line
        data = {"code": error.code, "detail": error.message}
        message = f"Parse error: {error.message}"
        refusal = JSONRPCError(
            jsonrpc="2.0", id=None, error=ErrorData(code=_PARSE_ERROR, message=message, data=data)
        )
        await self.answers.send(SessionMessage(refusal))


async def _serve_stdio(server: MCPServer[Any]) -> None:
    """``server.run_stdio_async()``, with standard input read by ``_StrictLines``."""
    # What run_stdio_async does with the server it wraps (the SDK offers no public way to
    # give it other streams).
    await serve_lowlevel_stdio(server._lowlevel_server)


async def serve_lowlevel_stdio(lowlevel: Server[Any]) -> None:
    """Serve a low-level MCP server over stdin and stdout, each line read strictly
    (``_StrictLines``) first: ``forge mcp``'s and ``forge gateway``'s one loop."""
    lines = _StrictLines()
    async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]
        lines.answers = write_stream
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
