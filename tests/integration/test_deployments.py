"""Real web and worker processes on both deployments: runs finish on separate workers,
events stream over websockets without loss, crashed workers are recovered, and racing
workers neither run a step twice nor overspend."""

from __future__ import annotations

import asyncio

import pytest
import websockets

from .deployment import Deployment, events_in, wait_for

pytestmark = pytest.mark.slow

CHAIN = """
goal: Count the order lines of three suppliers
steps:
  - {id: acme, description: Count ACME's order lines, tool: echo, args: {lines: 12}}
  - {id: northwind, description: Count Northwind's order lines, tool: echo, args: {lines: 7},
     depends_on: [acme]}
  - {id: total, description: Record the total line count, tool: file_write,
     args: {path: total.txt, content: "19"}, depends_on: [northwind]}
"""


def _collect(deployment: Deployment, run_id: int, after: int, stop_at: str | None, limit: int):
    async def listen() -> list[dict]:
        received: list[dict] = []
        async with websockets.connect(
            deployment.ws_url(run_id, after), additional_headers=deployment.ws_headers()
        ) as socket:
            while len(received) < limit:
                for event in events_in(await asyncio.wait_for(socket.recv(), timeout=30)):
                    received.append(event)
                    if (stop_at and event["event_type"] == stop_at) or len(received) == limit:
                        return received
        return received

    return asyncio.run(listen())


def test_a_run_finishes_on_a_worker_process_and_streams_every_event_in_order(deployment):
    plan_id, number = deployment.approved_plan("Line count", CHAIN)
    run_id = deployment.start_run(plan_id, number)

    streamed = _collect(deployment, run_id, 0, "run_succeeded", 1000)

    assert [e["seq"] for e in streamed] == list(range(1, len(streamed) + 1))
    stored = deployment.api("ada", "GET", f"/runs/{run_id}/events")
    assert [e["seq"] for e in stored] == [e["seq"] for e in streamed]
    assert streamed[-1]["event_type"] == "run_succeeded"
    workspace = deployment.root / "workspaces" / f"run-{run_id}"
    assert (workspace / "total.txt").read_text() == "19"


def test_a_websocket_that_reconnects_with_its_last_seq_loses_nothing(deployment):
    plan_id, number = deployment.approved_plan("Line count", CHAIN)
    run_id = deployment.start_run(plan_id, number)

    first = _collect(deployment, run_id, 0, None, 3)
    rest = _collect(deployment, run_id, first[-1]["seq"], "run_succeeded", 1000)

    seqs = [e["seq"] for e in first + rest]
    assert seqs == list(range(1, len(seqs) + 1))
    assert rest[-1]["event_type"] == "run_succeeded"


def test_the_websocket_refuses_anonymous_clients_and_foreign_origins(deployment):
    plan_id, number = deployment.approved_plan("Line count", CHAIN)
    run_id = deployment.start_run(plan_id, number)

    async def refused(headers: dict[str, str]) -> bool:
        try:
            async with websockets.connect(
                deployment.ws_url(run_id), additional_headers=headers
            ) as s:
                await asyncio.wait_for(s.recv(), timeout=5)
        except (websockets.ConnectionClosed, websockets.InvalidStatus):
            return True
        return False

    assert asyncio.run(refused({"Origin": deployment.base}))
    assert asyncio.run(refused({**deployment.ws_headers(), "Origin": "http://evil.example"}))


SLOW_READ = """
goal: Read the supplier archive slowly
steps:
  - {id: archive, description: Read the archive index, tool: sleep, args: {seconds: 4}}
  - {id: summary, description: Summarise the archive, tool: echo, args: {ok: true},
     depends_on: [archive]}
"""

SLOW_SHELL = """
goal: Rebuild the supplier archive
steps:
  - {id: rebuild, description: Rebuild the archive bundle, tool: shell,
     args: {argv: [sleep, "4"]}}
  - {id: summary, description: Summarise the archive, tool: echo, args: {ok: true},
     depends_on: [rebuild]}
"""


def _kill_the_worker_mid_step(deployment: Deployment, run_id: int, step: str) -> None:
    wait_for(lambda: _status(deployment, run_id, step) == "running")
    for worker in list(deployment.workers):
        deployment.kill(worker)
    deployment.start_worker()  # its reaper finds the lease expired


def _status(deployment: Deployment, run_id: int, step: str) -> str:
    return {s["step_id"]: s["status"] for s in deployment.run(run_id)["steps"]}[step]


def test_a_worker_killed_mid_step_is_replaced_and_the_repeatable_step_is_retried(deployment):
    plan_id, number = deployment.approved_plan("Archive", SLOW_READ)
    run_id = deployment.start_run(plan_id, number)

    _kill_the_worker_mid_step(deployment, run_id, "archive")

    run = deployment.wait_status(run_id, "succeeded", timeout=60)
    archive = next(s for s in run["steps"] if s["step_id"] == "archive")
    assert archive["attempt"] == 2
    events = deployment.api("ada", "GET", f"/runs/{run_id}/events")
    assert any(e["event_type"] == "step_retried" and e["step_id"] == "archive" for e in events)


def test_a_worker_killed_mid_step_leaves_a_side_effect_for_a_person_to_reconcile(deployment):
    plan_id, number = deployment.approved_plan("Archive", SLOW_SHELL)
    run_id = deployment.start_run(plan_id, number)

    _kill_the_worker_mid_step(deployment, run_id, "rebuild")

    wait_for(lambda: _status(deployment, run_id, "rebuild") == "needs_reconciliation", 30)
    assert _status(deployment, run_id, "summary") == "pending"
    deployment.api(
        "ada",
        "POST",
        f"/runs/{run_id}/steps/rebuild/reconcile",
        {"status": "succeeded", "output": {"exit_code": 0}},
    )
    assert deployment.wait_status(run_id, "succeeded")["status"] == "succeeded"


def _fan_out(count: int, max_cost: float) -> str:
    steps = "\n".join(
        f"  - {{id: s{i}, description: Price supplier {i}, tool: sleep, args: {{seconds: 0.2}},"
        f" estimate: {{cost: 1.0}}}}"
        for i in range(count)
    )
    join = ", ".join(f"s{i}" for i in range(count))
    return (
        f"goal: Price every supplier\nbudget: {{max_cost: {max_cost}}}\nsteps:\n{steps}\n"
        f"  - {{id: total, description: Add up the prices, tool: noop, depends_on: [{join}]}}\n"
    )


def test_two_workers_racing_on_one_run_never_run_a_step_twice_or_overspend(deployment):
    while len(deployment.workers) < 2:
        deployment.start_worker()
    plan_id, number = deployment.approved_plan("Pricing", _fan_out(12, 8.0))
    run_id = deployment.start_run(plan_id, number)

    run = deployment.wait_status(run_id, "budget_exhausted", "succeeded", timeout=60)
    wait_for(lambda: all(s["status"] != "running" for s in deployment.run(run_id)["steps"]))

    records = deployment.api("ada", "GET", f"/runs/{run_id}/records")
    executed = [r["step_id"] for r in records]
    assert len(executed) == len(set(executed)), executed
    run = deployment.run(run_id)
    assert run["status"] == "budget_exhausted"
    assert run["budget"]["used_cost"] <= 8.0
    assert len(executed) == 8
