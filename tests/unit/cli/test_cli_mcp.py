"""``forge mcp``: the MCP tools over stdio, its token from the environment only."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
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


def _raw_conversation(*lines: str) -> list[dict[str, object]]:
    """Send ``lines`` to ``forge mcp`` over stdio as they are, after the handshake, and
    return every JSON-RPC answer it wrote (Forge is unreachable: no tool call succeeds).

    Its input stays open until it has answered as many messages as were sent: a stdio
    server stops at the end of its input, dropping a call still in flight (the tool call
    that was waiting for the unreachable Forge, about one run in six)."""
    import json

    handshake = [
        json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}}),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ]  # fmt: skip
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO", "FORGE_"))}
    env = clean | {"FORGE_API_TOKEN": TOKEN, "FORGE_URL": "http://127.0.0.1:9"}
    server = subprocess.Popen(
        [sys.executable, "-m", "forge.cli", "mcp"], stdin=subprocess.PIPE,
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env, cwd=REPO,
    )  # fmt: skip
    watchdog = threading.Timer(60, server.kill)
    watchdog.start()
    try:
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write("\n".join([*handshake, *lines, ""]))
        server.stdin.flush()
        answers: list[dict[str, object]] = []
        while sum(1 for a in answers if a.get("id") != 0) < len(lines):
            line = server.stdout.readline()
            if not line:
                break  # it stopped (or the watchdog stopped it): the test says what is missing
            if line.strip():
                answers.append(json.loads(line))
        server.stdin.close()
        server.wait(timeout=30)
        return answers
    finally:
        watchdog.cancel()
        if server.poll() is None:
            server.kill()


def _tool_call(id_: int, arguments: str) -> str:
    return (
        f'{{"jsonrpc": "2.0", "id": {id_}, "method": "tools/call", "params": '
        f'{{"name": "compile_plan", "arguments": {arguments}}}}}'
    )


def test_over_stdio_a_message_nested_absurdly_deep_is_refused_with_the_document_code():
    levels = 100_000
    deep = '{"goal": "g", "steps": [{"id": "a", "args": ' + '{"a":' * levels + "1"
    deep += "}" * levels + "}]}"

    answers = _raw_conversation(_tool_call(1, '{"document": ' + deep + "}"))

    [refusal] = [answer for answer in answers if "error" in answer and answer["id"] is None]
    assert refusal["error"]["code"] == -32700  # type: ignore[index]
    assert refusal["error"]["data"]["code"] == "document_too_deep"  # type: ignore[index]


def test_over_stdio_a_repeated_key_is_refused_and_the_next_call_is_still_answered():
    twice = '{"document": {"goal": "one", "goal": "two", "steps": []}}'

    answers = _raw_conversation(_tool_call(1, twice), _tool_call(2, '{"document": {}}'))

    refusals = [answer for answer in answers if "error" in answer and answer["id"] is None]
    assert [r["error"]["data"]["code"] for r in refusals] == ["duplicate_key"]  # type: ignore[index]
    assert any(answer.get("id") == 2 for answer in answers)  # the session went on
