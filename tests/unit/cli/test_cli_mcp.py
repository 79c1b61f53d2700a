"""``forge mcp``: the MCP tools over stdio, its token from the environment only."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from forge.mcp_server import TOOL_NAMES

REPO = Path(__file__).resolve().parents[3]
TOKEN = "forge_0123456789ab_" + "s" * 43


def forge_mcp(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO", "FORGE_"))}
    return subprocess.run(
        [sys.executable, "-m", "forge.cli", "mcp", *args],
        capture_output=True, text=True, env=clean | env, cwd=REPO, timeout=60,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_without_a_token_in_the_environment_it_exits_2_naming_the_variable():
    result = forge_mcp("--url", "http://127.0.0.1:8000")

    assert result.returncode == 2
    assert "set FORGE_API_TOKEN to an API token" in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "give Forge's URL: --url URL, or set FORGE_URL"),
        (("--url", "forge.example.com"), "must start with http:// or https://"),
    ],
)
def test_without_a_usable_url_it_exits_2_saying_so(args, message):
    result = forge_mcp(*args, FORGE_API_TOKEN=TOKEN)

    assert result.returncode == 2
    assert message in result.stderr


def test_the_token_cannot_be_given_as_a_flag():
    result = forge_mcp("--url", "http://127.0.0.1:8000", "--token", TOKEN)

    assert result.returncode == 2
    assert "unrecognized arguments: --token" in result.stderr


def test_over_stdio_an_agent_lists_the_tools_and_is_told_when_forge_is_unreachable():
    # Nothing listens on port 9 of this machine: every call fails, and says why.
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "forge.cli", "mcp"],
        env={"FORGE_API_TOKEN": TOKEN, "FORGE_URL": "http://127.0.0.1:9"},
        cwd=REPO,
    )

    async def talk() -> tuple[list[str], object]:
        async with stdio_client(server) as streams, ClientSession(*streams) as session:
            await session.initialize()
            tools = [tool.name for tool in (await session.list_tools()).tools]
            return tools, await session.call_tool("get_run", {"run_id": 1})

    tools, result = anyio.run(talk)

    assert tuple(tools) == TOOL_NAMES
    assert result.is_error  # type: ignore[attr-defined]
    error = result.structured_content["error"]  # type: ignore[attr-defined]
    assert error["code"] == "unreachable"
    assert error["detail"].startswith("GET http://127.0.0.1:9/api/v1/runs/1: ConnectError")
