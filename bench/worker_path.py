"""The worker path of one worker, per noop step, and the memory of web and worker.

On a real deployment of each kind (embedded: SQLite; scale-out: PostgreSQL with Redis),
one worker process with the default slots:

- a chain of 1,000 and of 5,000 ``noop`` steps, from POST /runs to ``run_succeeded``
  (a websocket watcher connected, as on the run page), divided by the steps: the goal is
  at most 3 ms per step on SQLite and 5 ms on PostgreSQL at 1,000 steps, and the same
  per step at 5,000 (linear);
- the most resident memory of the web and the worker process during the 5,000-step
  run (sampled every 0.1 s): under 150 MiB each; and their lifetime peaks (VmHWM), which
  include compiling and approving the 5,000-step plan in the web process;
- a plan of two independent 3 s ``sleep`` steps, from ``run_started`` to
  ``run_succeeded``: the longest branch plus a small overhead, as the worker's slots
  run both at once;
- then ``--runs`` small runs (three steps each) one after another, the worker's and
  the web's resident memory (VmRSS) sampled as they finish: flat, because a run's
  scheduler is dropped when it ends and every cache is bounded.

Run: ``.venv/bin/python -m bench.worker_path`` (``--kind sqlite`` for one half).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

from bench.common import print_table
from bench.stream import chain, stream_latencies
from tests.integration.deployment import Deployment

GOALS_MS = {"sqlite": 3.0, "postgres": 5.0}
GOAL_MIB = 150.0


def memory_mib(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def timed_run(
    deployment: Deployment, plan: tuple[int, int], watch: tuple[int, ...] = ()
) -> tuple[float, list[float]]:
    """Seconds from POST /runs to ``run_succeeded``, and the most resident memory each
    process of ``watch`` had meanwhile (sampled every 0.1 s)."""
    peaks = [0.0 for _ in watch]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.1):
            for i, pid in enumerate(watch):
                peaks[i] = max(peaks[i], memory_mib(pid, "VmRSS"))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    started = time.perf_counter()
    run_id = deployment.start_run(*plan)
    stream_latencies(deployment, run_id)  # returns at run_succeeded
    took = time.perf_counter() - started
    done.set()
    sampler.join()
    return took, peaks


TWO_BRANCHES = """
goal: Two independent waits
steps:
  - {id: left, description: Wait on the left, tool: sleep, args: {seconds: 3}}
  - {id: right, description: Wait on the right, tool: sleep, args: {seconds: 3}}
  - {id: both, description: Join the two waits, tool: noop, depends_on: [left, right]}
"""


def two_branches(deployment: Deployment) -> float:
    """Seconds from ``run_started`` to ``run_succeeded`` of a plan of two independent
    3 s sleeps (the median of three runs): one worker runs both at once."""
    plan = deployment.approved_plan("two branches", TWO_BRANCHES)
    took = []
    for _ in range(3):
        run_id = deployment.start_run(*plan)
        deployment.wait_status(run_id, "succeeded", timeout=60)
        events = deployment.api("ada", "GET", f"/runs/{run_id}/events")
        when = {e["event_type"]: datetime.fromisoformat(e["created_at"]) for e in events}
        took.append((when["run_succeeded"] - when["run_started"]).total_seconds())
    return statistics.median(took)


def measure(kind: str, sizes: tuple[int, ...], runs: int) -> dict[str, object]:
    deployment = Deployment(kind, Path(tempfile.mkdtemp(prefix="forge-path-"))).start(workers=0)
    try:
        worker = deployment.start_worker(ready=True)
        web = deployment.web
        assert web is not None
        timed_run(deployment, deployment.approved_plan("warm", chain(20)))
        branches = two_branches(deployment)
        print(f"  [{kind}] two independent 3 s sleeps: {branches:.2f} s", flush=True)
        per_step = {}
        during: list[float] = []
        for size in sizes:
            plan = deployment.approved_plan(f"chain {size}", chain(size))
            took, during = timed_run(deployment, plan, (web.pid, worker.pid))
            per_step[size] = took / size * 1000
            print(f"  [{kind}] chain of {size}: {per_step[size]:.2f} ms/step", flush=True)
        # The most memory during the largest run; the lifetime peak (VmHWM) includes
        # compiling and approving its plan in the web process, before the run.
        peaks = (during[0], during[1])
        lifetime = (memory_mib(web.pid, "VmHWM"), memory_mib(worker.pid, "VmHWM"))
        small = deployment.approved_plan("small", chain(3))
        samples = []
        for n in range(1, runs + 1):
            run_id = deployment.start_run(*small)
            deployment.wait_status(run_id, "succeeded", timeout=60)
            if n in (runs // 10, runs // 2, runs):
                samples.append((n, memory_mib(worker.pid, "VmRSS"), memory_mib(web.pid, "VmRSS")))
                print(f"  [{kind}] {n} small runs: worker {samples[-1][1]:.1f} MiB", flush=True)
        locked = deployment.logs().count("database is locked")
    finally:
        deployment.stop()
    return {
        "per_step": per_step,
        "branches": branches,
        "peaks": peaks,
        "lifetime": lifetime,
        "samples": samples,
        "locked": locked,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kind", choices=("sqlite", "postgres", "both"), default="both")
    parser.add_argument("--runs", type=int, default=1000, help="small runs for the memory")
    options = parser.parse_args()
    kinds = ("sqlite", "postgres") if options.kind == "both" else (options.kind,)
    one, five, _ = os.getloadavg()
    print(f"worker path, {time.strftime('%Y-%m-%d %H:%M')}; load average {one:.2f}, {five:.2f}")
    results = {kind: measure(kind, (1000, 5000), options.runs) for kind in kinds}
    rows = []
    for kind, result in results.items():
        per_step = result["per_step"]
        assert isinstance(per_step, dict)
        web_peak, worker_peak = result["peaks"]  # type: ignore[misc]
        web_life, worker_life = result["lifetime"]  # type: ignore[misc]
        samples = result["samples"]
        assert isinstance(samples, list)
        first, last = samples[0], samples[-1]
        rows.append(
            [
                kind,
                f"{per_step[1000]:.2f}",
                f"{per_step[5000]:.2f}",
                f"{per_step[5000] / per_step[1000]:.2f}",
                f"{web_peak:.0f} / {worker_peak:.0f}",
                f"{web_life:.0f} / {worker_life:.0f}",
                f"{first[1]:.1f} -> {last[1]:.1f} ({first[0]} -> {last[0]} runs)",
                f"{first[2]:.1f} -> {last[2]:.1f}",
                result["locked"],
            ]
        )
    print()
    print_table(
        [
            "kind",
            "ms/step at 1,000",
            "at 5,000",
            "growth",
            "MiB during 5,000: web / worker",
            "VmHWM web / worker",
            "worker MiB over small runs",
            "web MiB",
            "'locked'",
        ],
        rows,
    )
    for kind, result in results.items():
        per_step = result["per_step"]
        assert isinstance(per_step, dict)
        goal = GOALS_MS[kind]
        peaks = result["peaks"]
        assert isinstance(peaks, tuple)
        print(
            f"{kind}: two independent 3 s branches in {result['branches']:.2f} s; "
            f"{per_step[1000]:.2f} ms/step at 1,000 (goal <= {goal} ms: "
            f"{'met' if per_step[1000] <= goal else 'NOT met'}); peak "
            f"{max(peaks):.0f} MiB (goal < {GOAL_MIB:.0f}: "
            f"{'met' if max(peaks) < GOAL_MIB else 'NOT met'})"
        )


if __name__ == "__main__":
    main()
