"""What the gateway adds per call, this checkout against another one, in one run.

``python -m bench.gateway_compare OTHER [CALLS]``: ``OTHER`` is a checkout of another
revision (``git worktree add --detach /tmp/base main``), run with this checkout's
Python environment. Both deployments are started as ``bench.gateway`` starts one (SQLite,
uvicorn, no worker, PyPI's ``mcp-server-time``), each from its own checkout, and the MCP
SDK's client then calls ``get_current_time`` ``CALLS`` times (default 1000) each way in
turn: directly over stdio, through this checkout's ``/mcp/gateway`` and through the
other's. Alternating call by call, the three see the same machine at the same moment,
which on a shared machine matters more than anything else (docs/benchmarks.md).

Reported: median and p99 each way, what each gateway adds at the median over the direct
call, and the ratio of the two added costs (a change lands with a gain of 5% or more).
"""

from __future__ import annotations

import importlib.util
import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from bench.common import print_table
from bench.gateway import ARGS, CALLS, GOAL_ADDED_MS, deploy, ms, timed
from tests.fixtures.ledger import TIME_SERVER
from tests.integration.deployment import Deployment


def deployment_of(checkout: Path) -> type[Deployment]:
    """``checkout``'s own ``Deployment`` class, which starts that checkout's code."""
    path = checkout / "tests" / "integration" / "deployment.py"
    spec = importlib.util.spec_from_file_location("bench_other_deployment", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"{path}: not a Forge checkout")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    kind: type[Deployment] = module.Deployment
    return kind


async def measure(this: Deployment, other: Deployment, calls: int) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {"direct": [], "this": [], "other": []}
    server = StdioServerParameters(command=TIME_SERVER[0], args=TIME_SERVER[1:])
    async with (
        stdio_client(server) as streams,
        ClientSession(*streams) as upstream,
        httpx2.AsyncClient(headers=_auth(this), timeout=60) as this_http,
        httpx2.AsyncClient(headers=_auth(other), timeout=60) as other_http,
        streamable_http_client(f"{this.base}/mcp/gateway", http_client=this_http) as mine,
        streamable_http_client(f"{other.base}/mcp/gateway", http_client=other_http) as theirs,
        ClientSession(*mine) as this_gateway,
        ClientSession(*theirs) as other_gateway,
    ):
        for session in (upstream, this_gateway, other_gateway):
            await session.initialize()
        ways: list[tuple[str, Any, str]] = [
            ("direct", upstream, "get_current_time"),
            ("this", this_gateway, "time.get_current_time"),
            ("other", other_gateway, "time.get_current_time"),
        ]
        for _ in range(20):  # warm all up: sessions, caches, the toolbox's first listing
            for _, session, tool in ways:
                await session.call_tool(tool, ARGS)
        for n in range(calls):
            # Each round in another order, so that neither gateway always follows the other.
            for name, session, tool in ways[n % 3 :] + ways[: n % 3]:
                await timed(lambda s=session, t=tool: s.call_tool(t, ARGS), samples[name])
    return samples


def _auth(deployment: Deployment) -> dict[str, str]:
    return {"Authorization": f"Bearer {deployment.tokens['ada']}"}


def main() -> None:
    if len(sys.argv) < 2:
        raise SystemExit("usage: python -m bench.gateway_compare OTHER_CHECKOUT [CALLS]")
    other_checkout = Path(sys.argv[1]).resolve()
    calls = int(sys.argv[2]) if len(sys.argv) > 2 else CALLS
    with tempfile.TemporaryDirectory() as root:
        (Path(root) / "this").mkdir()
        (Path(root) / "other").mkdir()
        this = deploy(Path(root) / "this")
        try:
            other = deploy(Path(root) / "other", deployment_of(other_checkout))
            try:
                samples = anyio.run(lambda: measure(this, other, calls))
            finally:
                other.stop()
        finally:
            this.stop()
    direct = ms(samples["direct"], 0.5)
    added = {name: ms(samples[name], 0.5) - direct for name in ("this", "other")}
    rows = [
        ["direct (stdio)", f"{direct:.2f}", f"{ms(samples['direct'], 0.99):.2f}", ""],
        *(
            [f"gateway, {label}", f"{ms(samples[name], 0.5):.2f}",
             f"{ms(samples[name], 0.99):.2f}", f"{added[name]:.2f}"]
            for name, label in (("this", "this checkout"), ("other", str(other_checkout)))
        ),
    ]  # fmt: skip
    print(f"mcp-server-time get_current_time, {calls} calls each way, alternating")
    print_table(["path", "median ms", "p99 ms", "added at median ms"], rows)
    gain = 1 - added["this"] / added["other"] if added["other"] > 0 else 0.0
    print(f"added at the median: {added['this']:.2f} ms here, {added['other']:.2f} ms there "
          f"({gain:.0%} less here); goal <= {GOAL_ADDED_MS:g} ms: "
          f"{'met' if added['this'] <= GOAL_ADDED_MS else 'MISSED'}")  # fmt: skip


if __name__ == "__main__":
    main()
