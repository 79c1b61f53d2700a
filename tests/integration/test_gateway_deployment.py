"""The gateway in a real deployment (uvicorn and a worker process, SQLite): an agent on
the MCP SDK's own ClientSession, connected over stdio through ``forge gateway --url``, with
the tests' ledger MCP server configured through FORGE_MCP_SERVERS beside the web process.

Unbound: a read passes, a write is held until another person approves it, runs once,
and its repeat replays the answer. Bound: the agent executes a run started with executor
"agent": refused before its dependency and with other arguments, its approved calls
forwarded once, the worker running the built-in step between them, and the run succeeds
with every step's events on the run's feed."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.fixtures.ledger import Ledger, mcp_servers_file

from .deployment import REPO, Deployment, wait_for

pytestmark = pytest.mark.slow

PLAN = """
goal: Record the checked rent in the ledger
steps:
  - {id: look, description: List the ledger entries, tool: ledger.list_entries,
     done_when: {required_keys: [entries]}}
  - {id: note, description: Note the rent the ledger holds, tool: echo,
     args: {rent: {$from: look, path: entries.rent}}, depends_on: [look]}
  - {id: copy, description: Record the checked rent under its own key,
     tool: ledger.record_entry, depends_on: [note],
     args: {key: rent_checked, amount: {$from: note, path: rent}}}
"""


@pytest.fixture
def deployed(tmp_path, monkeypatch) -> Iterator[tuple[Deployment, Ledger]]:
    ledger = Ledger.at(tmp_path / "ledger", rent=900, fees=40)
    policy = tmp_path / "policy.yaml"
    scopes = ["compute", "file_read", "file_write", "shell", "http", "database_read", "mcp.ledger"]
    policy.write_text("allow: {" + ", ".join(f"{s}: ['*']" for s in scopes) + "}\n")
    servers = mcp_servers_file(tmp_path / "mcp.json", ledger=ledger.entry())
    monkeypatch.setenv("FORGE_MCP_SERVERS", str(servers))
    monkeypatch.setenv("FORGE_POLICY", str(policy))
    monkeypatch.setenv("FORGE_GATEWAY_HOLD_SECONDS", "0")
    running = Deployment("sqlite", tmp_path / "deployment")
    running.root.mkdir()
    try:
        yield running.start(), ledger
    finally:
        running.stop()
        print(running.logs())


@asynccontextmanager
async def gateway(deployment: Deployment, user: str) -> AsyncIterator[ClientSession]:
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "forge.cli", "gateway", "--url", deployment.base],
        env={"FORGE_API_TOKEN": deployment.tokens[user]},
        cwd=str(REPO),
    )
    async with stdio_client(server) as streams, ClientSession(*streams) as session:
        await session.initialize()
        yield session


def error(result: Any) -> dict[str, Any]:
    assert result.is_error, result.content
    return result.structured_content["error"]


def test_an_agent_reads_is_held_for_a_write_and_executes_a_run_through_the_gateway(deployed):
    deployment, ledger = deployed
    write = ("ledger.record_entry", {"key": "deposit", "amount": 300})

    async def unbound() -> tuple[Any, ...]:
        async with gateway(deployment, "ada") as agent:
            tools = {tool.name for tool in (await agent.list_tools()).tools}
            read = await agent.call_tool("ledger.list_entries", {})
            held = await agent.call_tool(*write)
            approved = await anyio.to_thread.run_sync(
                lambda: deployment.api(
                    "grace", "POST", f"/gateway/calls/{error(held)['held_call']}/approve", {}
                )
            )
            ran = await agent.call_tool(*write)
            replayed = await agent.call_tool(*write)
            return tools, read, held, approved, ran, replayed

    tools, read, held, approved, ran, replayed = anyio.run(unbound)

    assert {"ledger.list_entries", "ledger.record_entry", "ledger.delete_entry"} <= tools
    assert read.structured_content == {"entries": {"rent": 900, "fees": 40}}
    assert error(held)["code"] == "approval_pending"
    assert (approved["status"], approved["decided_by"]) == ("approved", "grace")
    assert ran.structured_content == replayed.structured_content == {"recorded": "deposit"}
    writes = [call for call in ledger.calls() if call["tool"] == "record_entry"]
    assert writes == [{"tool": "record_entry", "args": {"key": "deposit", "amount": 300}}]

    plan_id, number = deployment.approved_plan("Ledger", PLAN)
    started = deployment.api(
        "ada", "POST", "/runs", {"plan_id": plan_id, "version": number, "executor": "agent"}
    )
    run_id = started["id"]
    meta = {"forge/run": run_id}

    async def bound() -> tuple[Any, ...]:
        async with gateway(deployment, "ada") as agent:
            early = await agent.call_tool(
                "ledger.record_entry", {"key": "rent_checked", "amount": 900},
                meta={**meta, "forge/step": "copy"},
            )  # fmt: skip
            looked = await agent.call_tool(
                "ledger.list_entries", {}, meta={**meta, "forge/step": "look"}
            )
            # the worker process runs the built-in step
            await anyio.to_thread.run_sync(
                lambda: wait_for(
                    lambda: (
                        {s["step_id"]: s["status"] for s in deployment.run(run_id)["steps"]}["copy"]
                        == "ready"
                    )
                )
            )
            other = await agent.call_tool(
                "ledger.record_entry", {"key": "rent_checked", "amount": 1},
                meta={**meta, "forge/step": "copy"},
            )  # fmt: skip
            copied = await agent.call_tool(
                "ledger.record_entry", {"key": "rent_checked", "amount": 900},
                meta={**meta, "forge/step": "copy"},
            )  # fmt: skip
            return early, looked, other, copied

    early, looked, other, copied = anyio.run(bound)

    assert error(early)["code"] == "step_not_ready"
    assert looked.structured_content == {"entries": {"rent": 900, "fees": 40, "deposit": 300}}
    assert error(other)["code"] == "args_mismatch"
    assert copied.structured_content == {"recorded": "rent_checked"}
    done = deployment.wait_status(run_id, "succeeded", "failed", "needs_replan")
    assert done["status"] == "succeeded", deployment.logs()
    assert ledger.entries()["rent_checked"] == 900
    events = deployment.api("ada", "GET", f"/runs/{run_id}/events?after=0")
    succeeded = [e["step_id"] for e in events if e["event_type"] == "step_succeeded"]
    assert succeeded == ["look", "note", "copy"]
    assert [c["tool"] for c in ledger.calls()].count("record_entry") == 2
