"""A small MCP server for the README's example: one read-only tool, ``today``, over
stdio. Forge starts it from examples/mcp/servers.json and offers it as ``clock.today``."""

from __future__ import annotations

from datetime import UTC, datetime

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("clock")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def today() -> dict[str, str]:
    """Today's date in UTC, as YYYY-MM-DD."""
    return {"date": datetime.now(UTC).date().isoformat()}


if __name__ == "__main__":
    server.run()
