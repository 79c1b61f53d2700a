"""Live streaming and the worker path, measured on real processes in both deployments.

For each deployment (embedded: SQLite, one worker process, no Redis; scale-out:
PostgreSQL with Redis) it starts the web server (uvicorn) and a worker over a fresh database
and measures:

- latency from an event's commit in the worker to its arrival at a websocket client
  (p50 and p99 over every event of a run of noop steps);
- the per-step overhead of the real worker path: a chain of 100 and of 1,000 noop steps
  from POST /runs to ``run_succeeded``, divided by the number of steps, next to the same
  plan run in-process by ``forge run``'s LocalRun (the same core without a database);
- the resident memory (peak) of the web and worker processes during the 1,000-step run;
- how many "database is locked" errors the logs show (the goal is none).

Goals: p99 under 250 ms embedded and 100 ms with Redis; under 5 ms per step on SQLite and
10 ms on PostgreSQL, growing linearly; each process under 150 MiB.

Run: ``.venv/bin/python -m bench.stream`` (needs PostgreSQL and Redis for the second half).
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from datetime import datetime
from pathlib import Path

import websockets

from bench.common import print_table
from tests.integration.deployment import Deployment, events_in

GOALS = {"sqlite": (250.0, 5.0), "postgres": (100.0, 10.0)}


def chain(count: int) -> str:
    lines = ["goal: Measure the worker path", "steps:"]
    for i in range(count):
        deps = f"[s{i - 1}]" if i else "[]"
        lines.append(
            f"  - {{id: s{i}, description: Pass step {i} along, tool: noop, depends_on: {deps}}}"
        )
    return "\n".join(lines) + "\n"


def stream_latencies(deployment: Deployment, run_id: int) -> list[float]:
    async def listen() -> list[float]:
        latencies = []
        async with websockets.connect(
            deployment.ws_url(run_id), additional_headers=deployment.ws_headers()
        ) as socket:
            while True:
                message = await asyncio.wait_for(socket.recv(), timeout=120)
                arrived = time.time()
                for event in events_in(message):
                    created = datetime.fromisoformat(event["created_at"]).timestamp()
                    latencies.append((arrived - created) * 1000)
                    if event["event_type"] in ("run_succeeded", "run_failed"):
                        return latencies

    return asyncio.run(listen())


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def local_seconds(source: str) -> float:
    from forge.compiler import GraphCompiler
    from forge.plan import load_plan
    from forge.runners.basic import BASIC_TOOLS, BasicRunner
    from forge.runtime import ApprovalSigner, InMemoryRecordStore, ToolExecutor
    from forge.runtime.local import LocalRun
    from forge.tools import DEFAULT_POLICY, PolicyEngine, builtin_registry

    registry, policy = builtin_registry(), PolicyEngine(DEFAULT_POLICY)
    runner = BasicRunner()
    executor = ToolExecutor(
        registry, policy, InMemoryRecordStore(), dict.fromkeys(BASIC_TOOLS, runner),
        approvals=ApprovalSigner(b"bench-approval-key-0123456789"),
    )  # fmt: skip
    document = load_plan(source, "yaml")
    started = time.perf_counter()
    LocalRun(
        GraphCompiler(registry, policy), executor, Path(tempfile.mkdtemp()), approver="bench"
    ).run(document)
    return time.perf_counter() - started


def measure(kind: str) -> list[list[object]]:
    deployment = Deployment(kind, Path(tempfile.mkdtemp(prefix="forge-bench-"))).start()
    rows = []
    try:
        # Streaming latency: the websocket client is connected before the run starts.
        plan_id, number = deployment.approved_plan("Stream", chain(100))
        run_id = deployment.start_run(plan_id, number)
        latencies = stream_latencies(deployment, run_id)
        p50 = statistics.median(latencies)
        p99 = statistics.quantiles(latencies, n=100)[98]
        per_step = {}
        elapsed_by_count = {}
        for count in (100, 1000):
            source = chain(count)
            plan_id, number = deployment.approved_plan(f"Chain {count}", source)
            started = time.perf_counter()
            run_id = deployment.start_run(plan_id, number)
            stream_latencies(deployment, run_id)  # returns at run_succeeded, without polling
            elapsed = time.perf_counter() - started
            per_step[count] = elapsed / count * 1000
            elapsed_by_count[count] = elapsed
            local_ms = local_seconds(source) / count * 1000
            rows.append(
                [kind, count, f"{elapsed:.2f}", f"{per_step[count]:.2f}", f"{local_ms:.3f}"]
            )
        web, worker = deployment.processes[0], deployment.workers[0]
        web_mib, worker_mib = peak_rss_mib(web.pid), peak_rss_mib(worker.pid)
        locked = deployment.logs().count("database is locked")
    finally:
        deployment.stop()
    latency_goal, step_goal = GOALS[kind]
    print(
        f"\n[{kind}] websocket latency over {len(latencies)} events: p50 {p50:.1f} ms, "
        f"p99 {p99:.1f} ms (goal p99 < {latency_goal:.0f} ms: "
        f"{'met' if p99 < latency_goal else 'NOT met'})"
    )
    growth = per_step[1000] / per_step[100]
    print(
        f"[{kind}] per-step overhead {per_step[100]:.2f} ms at 100 steps, "
        f"{per_step[1000]:.2f} ms at 1,000 ({growth:.2f}x; goal < {step_goal:.0f} ms: "
        f"{'met' if max(per_step.values()) < step_goal else 'NOT met'})"
    )
    # The slope between the two sizes: the cost of one more step, without the fixed cost
    # of starting a run and seeing its last event arrive.
    marginal = (elapsed_by_count[1000] - elapsed_by_count[100]) / 900 * 1000
    print(f"[{kind}] marginal cost of one more step: {marginal:.2f} ms")
    print(
        f"[{kind}] peak RSS: web {web_mib:.0f} MiB, worker {worker_mib:.0f} MiB "
        f"(goal < 150 MiB: {'met' if max(web_mib, worker_mib) < 150 else 'NOT met'}); "
        f"'database is locked' in logs: {locked}"
    )
    return rows


def main() -> None:
    rows = measure("sqlite")
    try:
        rows += measure("postgres")
    except Exception as exc:  # PostgreSQL or Redis missing: report the half we have
        print(f"\n[postgres] not measured: {exc}")
    print()
    print_table(["deployment", "steps", "run s", "ms/step (worker path)", "ms/step (local)"], rows)


if __name__ == "__main__":
    main()
