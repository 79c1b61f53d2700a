"""What the gateway adds to one MCP call (issue 29, "Measured").

A deployment (``tests.integration.deployment``: SQLite, the web process under uvicorn, no
worker) is started with PyPI's ``mcp-server-time`` in ``FORGE_MCP_SERVERS``. The MCP
SDK's own client then calls ``get_current_time`` ``CALLS`` times each way, alternating so
that both see the same machine: directly (a stdio session with its own
``mcp-server-time`` process) and through ``/mcp/gateway`` (streamable HTTP, an unbound
read, which passes: the bearer-token check, the gateway's functions called in process,
the catalogue and policy, the executor, two audit events, the web process's session to the
server). Then 10,000 held
calls of another user are written to the database and the gateway is measured again, to
show that the held calls a deployment keeps do not slow a call down.

Reported: median and p99 per call each way and what the gateway adds. Goal (issue 29): at
most 2 ms added at the median, and no growth with 10,000 held calls.

Run with ``python -m bench.gateway [CALLS]`` (default 1000).
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from bench.common import print_table
from tests.fixtures.ledger import TIME_SERVER
from tests.integration.deployment import Deployment

CALLS = 1000
HELD = 10_000
GOAL_ADDED_MS = 2.0
ARGS = {"timezone": "UTC"}


def deploy(root: Path, kind: type[Deployment] = Deployment) -> Deployment:
    """A deployment with ``mcp-server-time`` (``kind``: another checkout's ``Deployment``
    starts that checkout's code, as ``bench.gateway_compare`` does)."""
    servers = root / "mcp.json"
    servers.write_text(
        json.dumps({"mcpServers": {"time": {"command": TIME_SERVER[0], "args": TIME_SERVER[1:]}}})
    )
    policy = root / "policy.yaml"
    # The default policy's scopes (the demo's plans use them) and the time server's.
    scopes = ["compute", "file_read", "file_write", "shell", "http", "database_read", "mcp.time"]
    policy.write_text("allow: {" + ", ".join(f"{s}: ['*']" for s in scopes) + "}\n")
    deployment = kind("sqlite", root / "deployment")
    deployment.root.mkdir()
    deployment.extra_env = {
        "FORGE_MCP_SERVERS": str(servers),
        "FORGE_POLICY": str(policy),
        "FORGE_LOG_LEVEL": "WARNING",
    }
    return deployment.start(workers=0)


def hold_many(deployment: Deployment) -> None:
    """``HELD`` held calls of grace's, written straight to the database."""
    code = (
        "from datetime import timedelta\n"
        "from django.utils import timezone\n"
        "from accounts.models import User\n"
        "from gateway.models import HeldCall\n"
        "grace = User.objects.get(username='grace')\n"
        "later = timezone.now() + timedelta(hours=1)\n"
        "HeldCall.objects.bulk_create([HeldCall(user=grace, server='time', "
        "tool='time.convert_time', arguments={'n': n}, args_hash=f'{n:064x}', "
        "side_effect='external', status='held', expires_at=later) "
        f"for n in range({HELD})], batch_size=1000)\n"
    )
    deployment.manage("shell", "-c", code)


async def timed(call: Callable[[], Awaitable[Any]], samples: list[float]) -> None:
    started = time.perf_counter()
    result = await call()
    samples.append(time.perf_counter() - started)
    if result.is_error:
        raise RuntimeError(f"the call failed: {result.content}")


async def measure(deployment: Deployment, calls: int, *, direct: bool) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {"direct": [], "gateway": []}
    server = StdioServerParameters(command=TIME_SERVER[0], args=TIME_SERVER[1:])
    headers = {"Authorization": f"Bearer {deployment.tokens['ada']}"}
    async with (
        stdio_client(server) as streams,
        ClientSession(*streams) as upstream,
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        streamable_http_client(f"{deployment.base}/mcp/gateway", http_client=http) as pipes,
        ClientSession(*pipes) as gateway,
    ):
        await upstream.initialize()
        await gateway.initialize()
        for _ in range(20):  # warm both up: sessions, caches, the toolbox's first listing
            await upstream.call_tool("get_current_time", ARGS)
            await gateway.call_tool("time.get_current_time", ARGS)
        for _ in range(calls):
            if direct:
                await timed(lambda: upstream.call_tool("get_current_time", ARGS), samples["direct"])
            await timed(
                lambda: gateway.call_tool("time.get_current_time", ARGS), samples["gateway"]
            )
    return samples


def ms(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def main() -> None:
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else CALLS
    with tempfile.TemporaryDirectory() as root:
        deployment = deploy(Path(root))
        try:
            first = anyio.run(lambda: measure(deployment, calls, direct=True))
            hold_many(deployment)
            held = anyio.run(lambda: measure(deployment, calls, direct=False))
        finally:
            deployment.stop()
    direct, gateway, after = first["direct"], first["gateway"], held["gateway"]
    rows = [
        ["direct (stdio)", f"{ms(direct, 0.5):.2f}", f"{ms(direct, 0.99):.2f}", ""],
        ["gateway", f"{ms(gateway, 0.5):.2f}", f"{ms(gateway, 0.99):.2f}",
         f"{ms(gateway, 0.5) - ms(direct, 0.5):.2f}"],
        [f"gateway, {HELD:,} held", f"{ms(after, 0.5):.2f}", f"{ms(after, 0.99):.2f}",
         f"{ms(after, 0.5) - ms(direct, 0.5):.2f}"],
    ]  # fmt: skip
    print(f"mcp-server-time get_current_time, {calls} calls each, MCP SDK client")
    print_table(["path", "median ms", "p99 ms", "added at median ms"], rows)
    added = statistics.median(gateway) * 1000 - statistics.median(direct) * 1000
    verdict = "met" if added <= GOAL_ADDED_MS else "MISSED"
    print(f"added at the median: {added:.2f} ms (goal <= {GOAL_ADDED_MS:g} ms: {verdict})")
    growth = (statistics.median(after) - statistics.median(gateway)) * 1000
    print(f"median with {HELD:,} held calls: {growth:+.2f} ms")


if __name__ == "__main__":
    main()
