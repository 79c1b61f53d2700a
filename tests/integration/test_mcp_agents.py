"""An agent on the MCP SDK's own ClientSession drives a real deployment (uvicorn and a
worker process) through Forge's MCP tools, over stdio (``forge mcp --url``) and over
streamable HTTP (``/mcp`` of the web process): it submits a plan, waits and is told the
wait timed out, cannot start the plan nor approve it itself, sees a person approve it
(over REST), starts it, and reads its events until it succeeded."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from forge.mcp_server import TOOL_NAMES

from .deployment import Deployment

pytestmark = pytest.mark.slow

PLAN = """
goal: Count the order lines of two suppliers and write the total
steps:
  - {id: acme, description: Count ACME's order lines, tool: echo, args: {lines: 12}}
  - {id: northwind, description: Count Northwind's order lines, tool: echo, args: {lines: 7}}
  - {id: total, description: Record the total line count, tool: file_write,
     args: {path: total.txt, content: "19"}, depends_on: [acme, northwind]}
"""


@pytest.fixture(scope="module")
def agent_token(deployment: Deployment) -> str:
    """The agent's user holds every role a plan's life needs, approving included."""
    roles = ("--role", "author", "--role", "approver", "--role", "operator")
    return deployment.manage("forge_user", "agent", *roles, "--token").strip().splitlines()[-1]


@asynccontextmanager
async def mcp_session(
    deployment: Deployment, transport: str, token: str
) -> AsyncIterator[ClientSession]:
    if transport == "stdio":
        forge = Path(sys.executable).with_name("forge")  # the console script users run
        server = StdioServerParameters(
            command=str(forge),
            args=["mcp", "--url", deployment.base],
            env={"FORGE_API_TOKEN": token},
        )
        async with stdio_client(server) as streams, ClientSession(*streams) as session:
            await session.initialize()
            yield session
        return
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=120)) as http,
        streamable_http_client(f"{deployment.base}/mcp", http_client=http) as streams,
        ClientSession(*streams) as session,
    ):
        await session.initialize()
        yield session


def data(result: CallToolResult) -> dict[str, Any]:
    assert result.structured_content is not None, result.content
    return result.structured_content


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_an_agent_submits_waits_sees_a_person_approve_starts_and_reads_every_event(
    deployment: Deployment, agent_token: str, transport: str
):
    def approve_as(user: str, plan_id: int) -> int:
        return httpx.post(
            f"{deployment.base}/api/v1/plans/{plan_id}/versions/1/approve",
            json={"comment": f"reviewed by {user}"},
            headers={"Authorization": f"Bearer {deployment.tokens.get(user, agent_token)}"},
            timeout=30,
        ).status_code

    async def agent() -> dict[str, Any]:
        seen: dict[str, Any] = {}
        async with mcp_session(deployment, transport, agent_token) as mcp:
            seen["tools"] = [tool.name for tool in (await mcp.list_tools()).tools]
            seen["compiled"] = data(await mcp.call_tool("compile_plan", {"source": PLAN}))
            submitted = data(
                await mcp.call_tool(
                    "submit_plan", {"name": f"Lines over {transport}", "source": PLAN}
                )
            )
            seen["submitted"] = submitted
            ids = {"plan_id": submitted["plan_id"], "version": submitted["version"]}
            seen["early_wait"] = data(
                await mcp.call_tool("wait_for_approval", {**ids, "timeout_s": 1})
            )
            seen["early_start"] = await mcp.call_tool("start_run", ids)
            seen["self_approval"] = await anyio.to_thread.run_sync(
                approve_as, "agent", ids["plan_id"]
            )

            async def grace_approves_soon() -> None:
                await anyio.sleep(1.0)
                seen["grace"] = await anyio.to_thread.run_sync(approve_as, "grace", ids["plan_id"])

            async with anyio.create_task_group() as group:
                group.start_soon(grace_approves_soon)
                seen["wait"] = data(
                    await mcp.call_tool("wait_for_approval", {**ids, "timeout_s": 60})
                )
            run = data(await mcp.call_tool("start_run", ids))
            seen["started"] = run
            events: list[dict[str, Any]] = []
            with anyio.fail_after(60):
                while not events or events[-1]["event_type"] != "run_succeeded":
                    read = data(
                        await mcp.call_tool(
                            "run_events",
                            {"run_id": run["run_id"], "after": events[-1]["seq"] if events else 0},
                        )
                    )
                    events += read["events"]
                    if not read["more"]:
                        await anyio.sleep(0.2)
            seen["events"] = events
            seen["run"] = data(await mcp.call_tool("get_run", {"run_id": run["run_id"]}))
        return seen

    seen = anyio.run(agent)

    assert tuple(seen["tools"]) == TOOL_NAMES
    assert seen["compiled"]["ok"] is True
    submitted = seen["submitted"]
    assert (submitted["status"], submitted["author"]) == ("awaiting_approval", "agent")
    assert (seen["early_wait"]["timed_out"], seen["early_wait"]["status"]) == (
        True,
        "awaiting_approval",
    )
    early = seen["early_start"]
    assert early.is_error
    assert (data(early)["error"]["status"], data(early)["error"]["code"]) == (409, "not_approved")
    assert seen["self_approval"] == 403
    assert seen["grace"] == 200
    assert (seen["wait"]["timed_out"], seen["wait"]["status"]) == (False, "approved")
    assert seen["wait"]["decision"]["reviewer"] == "grace"
    seqs = [event["seq"] for event in seen["events"]]
    assert seqs == list(range(1, len(seqs) + 1))
    assert seen["run"]["status"] == "succeeded"
    workspace = deployment.root / "workspaces" / f"run-{seen['started']['run_id']}"
    assert (workspace / "total.txt").read_text() == "19"
    runs = deployment.api("grace", "GET", f"/runs?plan_id={submitted['plan_id']}")
    assert runs["count"] == 1  # the refused start left no run behind
    started = deployment.api("grace", "GET", "/audit?action=run.started")["items"]
    mine = [e for e in started if e["payload"]["plan"] == submitted["plan_id"]]
    assert [(e["actor"], e["payload"]["approved_by"]) for e in mine] == [("agent", "grace")]
