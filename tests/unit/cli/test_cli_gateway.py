"""``forge gateway``: the gateway over stdio, its token from the environment only, every
list and call a request to the Forge site (here one that does not answer)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client

REPO = Path(__file__).resolve().parents[3]
TOKEN = "forge_0123456789ab_" + "s" * 43


def forge_gateway(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO", "FORGE_"))}
    return subprocess.run(
        [sys.executable, "-m", "forge.cli", "gateway", *args],
        capture_output=True, text=True, env=clean | env, cwd=REPO, timeout=60,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_without_a_token_in_the_environment_it_exits_2_naming_the_variable():
    result = forge_gateway("--url", "http://127.0.0.1:8000")

    assert result.returncode == 2
    assert "set FORGE_API_TOKEN to an API token" in result.stderr
    assert result.stdout == ""


def test_without_a_url_it_exits_2_saying_so():
    result = forge_gateway(FORGE_API_TOKEN=TOKEN)

    assert result.returncode == 2
    assert "give Forge's URL: --url URL, or set FORGE_URL" in result.stderr


def test_over_stdio_a_list_and_a_call_say_that_forge_is_unreachable():
    # Nothing listens on port 9 of this machine.
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "forge.cli", "gateway", "--url", "http://127.0.0.1:9"],
        env={"FORGE_API_TOKEN": TOKEN},
        cwd=REPO,
    )

    async def talk() -> tuple[MCPError, object, object]:
        async with stdio_client(server) as streams, ClientSession(*streams) as session:
            info = await session.initialize()
            with pytest.raises(MCPError) as listing:
                await session.list_tools()
            called = await session.call_tool(
                "ledger.delete_entry", {"key": "rent"}, meta={"forge/run": 4, "forge/step": "drop"}
            )
            return listing.value, called, info.server_info

    listing, called, info = anyio.run(talk)

    assert listing.data["code"] == "unreachable"
    assert called.is_error  # type: ignore[attr-defined]
    error = called.structured_content["error"]  # type: ignore[attr-defined]
    assert (error["status"], error["code"]) == (503, "unreachable")
    assert error["detail"].startswith("POST http://127.0.0.1:9/api/v1/gateway/calls: ConnectError")
    assert info.name == "forge-gateway"  # type: ignore[attr-defined]


def test_a_call_naming_a_run_without_a_step_is_refused_before_forge_is_asked():
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "forge.cli", "gateway", "--url", "http://127.0.0.1:9"],
        env={"FORGE_API_TOKEN": TOKEN},
        cwd=REPO,
    )

    async def talk() -> object:
        async with stdio_client(server) as streams, ClientSession(*streams) as session:
            await session.initialize()
            return await session.call_tool("ledger.delete_entry", {}, meta={"forge/run": 4})

    called = anyio.run(talk)

    assert called.is_error  # type: ignore[attr-defined]
    assert called.structured_content == {  # type: ignore[attr-defined]
        "error": {
            "status": 400,
            "code": "invalid_meta",
            "detail": "a bound call names both 'forge/run' and 'forge/step' in its _meta",
        },
        "next": 'Name both the run and the step in _meta: {"forge/run": ID, "forge/step": "step"}.',
    }
