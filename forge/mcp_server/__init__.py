"""Forge's MCP server: the tools an agent uses to propose plans and follow their runs.

``build_server(client_for)`` (``tools``) is the one definition of the tools; ``stdio``
serves them as ``forge mcp --url URL``, and the web process serves them at ``/mcp``
(``forge_web.mcp``). Answers are JSON (``views``). See ``docs/agents.md``.
"""

from forge.mcp_server.tools import MAX_WAIT_S, TOOL_NAMES, ClientFor, build_server

__all__ = ["MAX_WAIT_S", "TOOL_NAMES", "ClientFor", "build_server"]
