"""The worker path of one worker, per noop step, against its floor; and the memory of
web and worker.

On a real deployment of each kind (embedded: SQLite; scale-out: PostgreSQL with Redis),
one worker process with the default slots:

- a chain of 1,000 and of 5,000 ``noop`` steps, from POST /runs to ``run_succeeded``
  (a websocket watcher connected, as on the run page), divided by the steps, against
  the floor measured just before each chain in this same run: one transaction that
  INSERTs an event and UPDATEs a step's row, then COMMITs, from a client of its own
  (``Floor``). The goal (issue 27) is at most 3x the floor on PostgreSQL at 1,000
  steps; SQLite's ratio to its own floor is printed beside it. Each chain is also
  timed from its first step's start (the stored events), apart from the start of the
  run, and the CPU the worker, the web process and the database's backends spent per
  step is printed against the floor's (client and backend): the CPU is what a loaded
  machine inflates least;
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
from typing import Any

from bench.common import print_table
from bench.stream import chain, stream_latencies
from tests.integration.deployment import Deployment

# Per step at 1,000 steps over the floor measured in the same run (issue 27).
GOAL_RATIO = {"postgres": 3.0}
GOAL_MIB = 150.0


def memory_mib(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return float("nan")


FLOOR_TRANSACTIONS = 200  # per round of the floor


class Floor:
    """The least a step's transaction can cost on this database: one transaction that
    INSERTs an event and UPDATEs a step's row, then COMMITs (on PostgreSQL four round
    trips with psycopg: BEGIN, INSERT, UPDATE, COMMIT; on SQLite ``BEGIN IMMEDIATE`` and
    WAL with ``synchronous=NORMAL``, as the deployment opens it), from a client of its
    own, measured in the same run as the steps. Its rows are copies of a finished run's
    last event and first step, removed afterwards."""

    def __init__(self, deployment: Deployment, run_id: int) -> None:
        self.kind = deployment.kind
        url = deployment.env["DATABASE_URL"]
        if self.kind == "sqlite":
            import sqlite3

            self.mark = "?"
            self.conn: Any = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None)
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")
        else:
            import psycopg

            self.mark = "%s"
            self.conn = psycopg.connect(url)
        self.run_id = run_id
        self.samples: list[float] = []
        self.cpu_samples: list[float] = []
        cursor = self.conn.cursor()
        cursor.execute(
            f"SELECT * FROM runs_runevent WHERE run_id = {self.mark} ORDER BY seq DESC LIMIT 1",
            [run_id],
        )
        names = [column[0] for column in cursor.description]
        self.event = dict(zip(names, cursor.fetchone(), strict=True))
        self.event.pop("id")
        cursor.execute(
            "SELECT plan_version, step_id, status, output, finished_at FROM runs_steprun "
            f"WHERE run_id = {self.mark} ORDER BY position LIMIT 1",
            [run_id],
        )
        self.step = cursor.fetchone()
        self.seq = 10**6
        self._commit()

    def _commit(self) -> None:
        if self.kind == "postgres":
            self.conn.commit()

    def _values(self, value: Any) -> Any:
        if self.kind == "postgres" and isinstance(value, (dict, list)):
            from psycopg.types.json import Jsonb

            return Jsonb(value)
        return value

    def transaction(self) -> None:
        mark = self.mark
        self.seq += 1
        event = {**self.event, "seq": self.seq}
        columns = ", ".join(event)
        marks = ", ".join([mark] * len(event))
        version, step_id, status, output, finished_at = self.step
        cursor = self.conn.cursor()
        if self.kind == "sqlite":
            cursor.execute("BEGIN IMMEDIATE")
        cursor.execute(
            f"INSERT INTO runs_runevent ({columns}) VALUES ({marks})",
            [self._values(v) for v in event.values()],
        )
        cursor.execute(
            f"UPDATE runs_steprun SET status = {mark}, output = {mark}, finished_at = {mark} "
            f"WHERE run_id = {mark} AND plan_version = {mark} AND step_id = {mark}",
            [status, self._values(output), finished_at, self.run_id, version, step_id],
        )
        if self.kind == "sqlite":
            cursor.execute("COMMIT")
        else:
            self.conn.commit()

    def _cpu(self) -> float:
        """CPU seconds of this client (the bench process) and of its server backend."""
        spent = time.process_time()
        if self.kind == "postgres":
            spent += cpu_seconds(self.conn.info.backend_pid)
        return spent

    def measure(self, rounds: int = 3) -> float:
        """Median of ``rounds`` rounds of the ms per transaction, each round's mean; kept
        with the earlier rounds for ``ms`` (and the CPU ms, client and server, for
        ``cpu_ms``)."""
        for _ in range(rounds):
            cpu = self._cpu()
            started = time.perf_counter()
            for _ in range(FLOOR_TRANSACTIONS):
                self.transaction()
            self.samples.append((time.perf_counter() - started) / FLOOR_TRANSACTIONS * 1000)
            self.cpu_samples.append((self._cpu() - cpu) / FLOOR_TRANSACTIONS * 1000)
        return statistics.median(self.samples[-rounds:])

    @property
    def cpu_ms(self) -> float:
        return statistics.median(self.cpu_samples)

    @property
    def ms(self) -> float:
        return statistics.median(self.samples)

    def close(self) -> None:
        cursor = self.conn.cursor()
        cursor.execute(
            f"DELETE FROM runs_runevent WHERE run_id = {self.mark} AND seq > {self.mark}",
            [self.run_id, 10**6],
        )
        self._commit()
        self.conn.close()


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of a process so far (every thread), 0 once gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Cpu:
    """CPU seconds spent by the worker, the web process and (on PostgreSQL) the server's
    backends for the deployment's database (not the floor's own), between two samples:
    where a step's time goes on a machine whose other load inflates the wall clock."""

    def __init__(self, floor: Floor, worker: int, web: int) -> None:
        self.floor, self.worker, self.web = floor, worker, web

    def _backends(self) -> list[int]:
        if self.floor.kind != "postgres":
            return []
        with self.floor.conn.cursor() as cursor:
            cursor.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                "AND pid <> pg_backend_pid()"
            )
            pids = [row[0] for row in cursor.fetchall()]
        self.floor.conn.commit()
        return pids

    def sample(self) -> dict[str, float]:
        backends = self._backends()
        return {
            "worker": cpu_seconds(self.worker),
            "web": cpu_seconds(self.web),
            "postgres": sum(cpu_seconds(pid) for pid in backends),
            "_pids": float(len(backends)),
        }

    @staticmethod
    def spent(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
        return {k: after[k] - before[k] for k in ("worker", "web", "postgres")}


def run_times(deployment: Deployment, run_id: int) -> tuple[float, float]:
    """From the stored events: seconds from ``run_started`` to the first step's start, and
    from then to ``run_succeeded``."""
    first = deployment.api("ada", "GET", f"/runs/{run_id}/events?limit=10")
    last_seq = deployment.run(run_id)["last_seq"]
    last = deployment.api("ada", "GET", f"/runs/{run_id}/events?after={last_seq - 1}")
    when = {e["event_type"]: datetime.fromisoformat(e["created_at"]) for e in reversed(first)}
    ended = datetime.fromisoformat(last[-1]["created_at"])
    assert last[-1]["event_type"] == "run_succeeded", last[-1]
    return (
        (when["step_started"] - when["run_started"]).total_seconds(),
        (ended - when["step_started"]).total_seconds(),
    )


def timed_run(
    deployment: Deployment, plan: tuple[int, int], watch: tuple[int, ...] = ()
) -> tuple[float, list[float], int]:
    """Seconds from POST /runs to ``run_succeeded``, the most resident memory each
    process of ``watch`` had meanwhile (sampled every 0.1 s), and the run."""
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
    return took, peaks, run_id


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


def measure(kind: str, sizes: dict[int, int], runs: int) -> dict[str, Any]:
    """``sizes``: steps of each chain, and how many runs of it."""
    deployment = Deployment(kind, Path(tempfile.mkdtemp(prefix="forge-path-"))).start(workers=0)
    try:
        worker = deployment.start_worker(ready=True)
        web = deployment.web
        assert web is not None
        _, _, warm = timed_run(deployment, deployment.approved_plan("warm", chain(20)))
        floor = Floor(deployment, warm)
        cpu = Cpu(floor, worker.pid, web.pid)
        cpu_ms: dict[int, list[dict[str, float]]] = {}
        branches = two_branches(deployment)
        print(f"  [{kind}] two independent 3 s sleeps: {branches:.2f} s", flush=True)
        per_step: dict[int, list[float]] = {}
        steps_only: dict[int, list[float]] = {}
        start: dict[int, list[float]] = {}
        during: list[float] = []
        for size, repeat in sizes.items():
            plan = deployment.approved_plan(f"chain {size}", chain(size))
            for _ in range(repeat):
                # The floor just before each chain, the web and the worker idle as then.
                floor_ms = floor.measure()
                before = cpu.sample()
                took, during, run_id = timed_run(deployment, plan, (web.pid, worker.pid))
                used = Cpu.spent(before, cpu.sample())
                cpu_ms.setdefault(size, []).append({k: v / size * 1000 for k, v in used.items()})
                first, steps = run_times(deployment, run_id)
                per_step.setdefault(size, []).append(took / size * 1000)
                steps_only.setdefault(size, []).append(steps / size * 1000)
                start.setdefault(size, []).append(first)
                print(
                    f"  [{kind}] chain of {size}: {per_step[size][-1]:.2f} ms/step "
                    f"(floor {floor_ms:.2f} ms: {per_step[size][-1] / floor_ms:.1f}x; from the "
                    f"first step {steps_only[size][-1]:.2f} ms/step; its first step "
                    f"{first:.2f} s after run_started; CPU ms/step "
                    + " ".join(f"{k} {v:.2f}" for k, v in cpu_ms[size][-1].items())
                    + ")",
                    flush=True,
                )
        floor.close()
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
        "floor": floor.ms,
        "floor_cpu": floor.cpu_ms,
        "cpu": {
            size: {k: statistics.median(run[k] for run in runs_) for k in runs_[0]}
            for size, runs_ in cpu_ms.items()
        },
        "per_step": {size: statistics.median(v) for size, v in per_step.items()},
        "spread": {size: (min(v), max(v)) for size, v in per_step.items()},
        "steps_only": {size: statistics.median(v) for size, v in steps_only.items()},
        "start": {size: statistics.median(v) for size, v in start.items()},
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
    parser.add_argument("--sizes", default="1000,5000", help="steps of the chains")
    parser.add_argument(
        "--repeat", default="3,3", help="runs of each chain, per size (a loaded machine: 3,1)"
    )
    options = parser.parse_args()
    kinds = ("sqlite", "postgres") if options.kind == "both" else (options.kind,)
    one, five, _ = os.getloadavg()
    print(f"worker path, {time.strftime('%Y-%m-%d %H:%M')}; load average {one:.2f}, {five:.2f}")
    sizes = tuple(int(n) for n in options.sizes.split(","))
    repeat = tuple(int(n) for n in options.repeat.split(","))
    if len(repeat) != len(sizes):
        parser.error("--repeat gives one count per size")
    results = {
        kind: measure(kind, dict(zip(sizes, repeat, strict=True)), options.runs) for kind in kinds
    }
    one, five, _ = os.getloadavg()
    print(f"\nMedians of {options.repeat} runs of the chains; load average {one:.2f}, {five:.2f}")
    rows = []
    for kind, result in results.items():
        floor = result["floor"]
        for size, ms in result["per_step"].items():
            low, high = result["spread"][size]
            rows.append(
                [
                    kind,
                    size,
                    f"{floor:.2f}",
                    f"{ms:.2f}",
                    f"{ms / floor:.1f}x",
                    f"{low:.2f}-{high:.2f}",
                    f"{result['steps_only'][size]:.2f}",
                    f"{result['start'][size]:.2f}",
                ]
            )
    print_table(
        [
            "kind",
            "steps",
            "floor ms",
            "ms/step",
            "/ floor",
            "range",
            "ms/step from 1st step",
            "1st step after run_started (s)",
        ],
        rows,
    )
    print("\nCPU ms per step (worker, web, the database's backends) and per floor transaction")
    rows = []
    for kind, result in results.items():
        for size, used in result["cpu"].items():
            total = sum(used.values())
            rows.append(
                [
                    kind,
                    size,
                    f"{used['worker']:.2f}",
                    f"{used['web']:.2f}",
                    f"{used['postgres']:.2f}" if kind == "postgres" else "-",
                    f"{total:.2f}",
                    f"{result['floor_cpu']:.2f}",
                    f"{total / result['floor_cpu']:.1f}x",
                ]
            )
    print_table(
        ["kind", "steps", "worker", "web", "postgres", "all", "floor CPU", "all / floor"], rows
    )
    rows = []
    for kind, result in results.items():
        web_peak, worker_peak = result["peaks"]
        web_life, worker_life = result["lifetime"]
        first, last = result["samples"][0], result["samples"][-1]
        rows.append(
            [
                kind,
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
            "MiB during 5,000: web / worker",
            "VmHWM web / worker",
            "worker MiB over small runs",
            "web MiB",
            "'locked'",
        ],
        rows,
    )
    for kind, result in results.items():
        size = min(result["per_step"])
        ratio = result["per_step"][size] / result["floor"]
        goal = GOAL_RATIO.get(kind)
        verdict = (
            f"goal <= {goal:.0f}x: {'met' if ratio <= goal else 'NOT met'}" if goal else "no goal"
        )
        peak = max(result["peaks"])
        print(
            f"{kind}: two independent 3 s branches in {result['branches']:.2f} s; "
            f"{result['per_step'][size]:.2f} ms/step at {size:,} = {ratio:.1f}x its floor of "
            f"{result['floor']:.2f} ms ({verdict}); peak {peak:.0f} MiB (goal < "
            f"{GOAL_MIB:.0f}: {'met' if peak < GOAL_MIB else 'NOT met'})"
        )


if __name__ == "__main__":
    main()
