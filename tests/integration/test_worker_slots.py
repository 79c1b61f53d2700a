"""Worker slots on real processes, over an SQLite file (WAL, one writer) and over
PostgreSQL: independent steps run at once in one worker process, and with several
slots in several workers no step runs twice, seqs stay gapless and the budget holds."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .deployment import Deployment, wait_for

pytestmark = pytest.mark.slow

TWO_WAITS = """
goal: Collect two slow supplier reports
steps:
  - {id: north, description: Wait for the northern report, tool: sleep, args: {seconds: 2}}
  - {id: south, description: Wait for the southern report, tool: sleep, args: {seconds: 2}}
  - {id: merge, description: Merge the two reports, tool: noop, depends_on: [north, south]}
"""


def _waits(count: int, seconds: float, budget: str = "") -> str:
    steps = "\n".join(
        f"  - {{id: s{i}, description: Price supplier {i}, tool: sleep,"
        f" args: {{seconds: {seconds}}}, estimate: {{cost: 1.0}}}}"
        for i in range(count)
    )
    join = ", ".join(f"s{i}" for i in range(count))
    return (
        f"goal: Price every supplier\n{budget}steps:\n{steps}\n"
        f"  - {{id: total, description: Add up the prices, tool: noop, depends_on: [{join}]}}\n"
    )


@pytest.fixture(scope="module")
def slotted(deployment_kind: str, tmp_path_factory) -> Iterator[Deployment]:
    """A deployment whose one worker has four slots."""
    running = Deployment(deployment_kind, tmp_path_factory.mktemp(f"slots-{deployment_kind}"))
    try:
        running.start(workers=0)
        running.start_worker(4, ready=True)
        yield running
    finally:
        running.stop()
        print(running.logs())


def _events(deployment: Deployment, run_id: int) -> list[dict]:
    return deployment.api("ada", "GET", f"/runs/{run_id}/events")


def _gapless(events: list[dict]) -> bool:
    return [e["seq"] for e in events] == list(range(1, len(events) + 1))


def test_one_worker_runs_two_independent_steps_at_once(slotted):
    plan_id, number = slotted.approved_plan("Two reports", TWO_WAITS)
    run_id = slotted.start_run(plan_id, number)

    slotted.wait_status(run_id, "succeeded", timeout=60)

    events = _events(slotted, run_id)
    order = [(e["event_type"], e["step_id"]) for e in events if e["step_id"] in ("north", "south")]
    started = [i for i, (kind, _) in enumerate(order) if kind == "step_started"]
    finished = [i for i, (kind, _) in enumerate(order) if kind == "step_succeeded"]
    # Both started before either finished: they ran at the same time.
    assert len(started) == 2 and max(started) < min(finished), order
    assert _gapless(events)


def test_slots_of_two_workers_never_run_a_step_twice_or_overspend(slotted):
    second = slotted.start_worker(3, ready=True)
    try:
        plan_id, number = slotted.approved_plan(
            "Pricing", _waits(16, 0.3, budget="budget: {max_cost: 10}\n")
        )
        run_id = slotted.start_run(plan_id, number)

        slotted.wait_status(run_id, "budget_exhausted", "succeeded", timeout=90)
        wait_for(lambda: all(s["status"] != "running" for s in slotted.run(run_id)["steps"]))
    finally:
        slotted.stop_worker(second)

    executed = [r["step_id"] for r in slotted.api("ada", "GET", f"/runs/{run_id}/records")]
    assert len(executed) == len(set(executed)) == 10, executed
    run = slotted.run(run_id)
    assert run["status"] == "budget_exhausted"
    assert run["budget"]["used_cost"] <= 10.0
    assert _gapless(_events(slotted, run_id))


def test_many_runs_share_the_slots_and_each_keeps_gapless_seqs(slotted):
    plan_id, number = slotted.approved_plan("Small pricing", _waits(3, 0.1))
    run_ids = [slotted.start_run(plan_id, number) for _ in range(6)]

    for run_id in run_ids:
        slotted.wait_status(run_id, "succeeded", timeout=90)

    for run_id in run_ids:
        executed = [r["step_id"] for r in slotted.api("ada", "GET", f"/runs/{run_id}/records")]
        assert sorted(executed) == ["s0", "s1", "s2", "total"]
        assert _gapless(_events(slotted, run_id))
