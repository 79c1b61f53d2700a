"""Scale-out: what more worker processes, and more slots in one worker, add, apart.

On a real deployment (web, PostgreSQL and Redis by default; ``--kind sqlite`` for the
embedded one) it drains each case with workers of ``--configs``, each ``PxS``: ``P``
worker processes of ``S`` slots each. The defaults put the two knobs side by side:
``1x1`` (the baseline), ``1x4`` (four slots in one process), ``4x1`` (four processes of
one slot), and ``1x8`` / ``4x8`` (issue 13's "four workers drain sleeps 3.2x one"), so
that a gain is credited to the knob that made it. The cases:

- ``wide sleep``: one run, a fan-out of ``--wide`` ``sleep`` steps (they wait, as model
  and HTTP calls do), joined by one step;
- ``wide noop``: a fan-out of ``--noop`` ``noop`` steps, whose cost is all Forge's own
  (the per-step cost, and where it goes: ``forge_worker --timings``: waiting for a run's
  lock, catching up with other workers' events, deciding, writing, claiming from the
  queue, recording results);
- ``many noop``: ``--runs`` runs of ``noop`` steps at once, ``--noop`` in all: Forge's
  own CPU per step (deciding, writing), in the worker's interpreter, spread over runs
  whose locks do not exclude each other;
- ``wide cpu``: a fan-out of ``--cpu`` ``shell`` steps that each compute for a while
  in a subprocess (a shell loop of ``--loop`` iterations, in the sandbox), as a build,
  a test suite or a converter does;
- ``many sleep``, ``many cpu`` (with ``--cases``): the same numbers of steps spread over
  ``--runs`` runs;

and, with one worker, a fan-out of ``--slots-steps`` sleeps with 1 slot and with
``--max-slots`` slots. The runs of a drain are started while the workers are paused, and
the drain is timed from the first ``step_started`` to the last ``run_succeeded`` as the
events record them (no polling in the measure). Each configuration runs ``--rounds``
times; the tables print medians, and each ratio is the ``1x1`` median of this same run
over the others' (``4x8`` also over ``1x8``).

Goals (issue 13): four workers drain sleeps at least 3.2x faster than one (``4x8`` over
``1x8``); 32 slots drain the sleeps at least 20x faster than 1.

Run: ``.venv/bin/python -m bench.scale_out`` (``--quick`` for a smaller, shorter pass).
PostgreSQL and Redis are those of the integration tests: ``FORGE_TEST_DATABASE_URL`` (a
database on the server each pass creates its own next to, and drops) and
``FORGE_TEST_REDIS_URL`` (give another db number than the tests' 7 to share a server).
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import statistics
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from bench.common import print_table
from tests.integration.deployment import Deployment, wait_for

GOAL_WORKERS = 3.2
GOAL_SLOTS = 20.0
ENDED = ("succeeded", "failed", "budget_exhausted", "cancelled", "needs_replan")


def cpu_args(loop: int) -> str:
    """A shell step's arguments that keep one core busy: a loop of ``loop`` iterations in
    ``sh`` (in the sandbox, as any shell step)."""
    script = f"i=0; while [ $i -lt {loop} ]; do i=$((i+1)); done"
    return f'{{argv: [sh, -c, "{script}"]}}'


def fan_out(count: int, tool: str, seconds: float, name: str = "w", loop: int = 0) -> str:
    args = {"sleep": f"{{seconds: {seconds}}}", "shell": cpu_args(loop)}.get(tool, "{}")
    lines = ["goal: Measure how workers scale out", "steps:"]
    lines += [
        f"  - {{id: {name}{i}, description: Work item {i}, tool: {tool}, args: {args}}}"
        for i in range(count)
    ]
    joined = ", ".join(f"{name}{i}" for i in range(count))
    lines.append(
        f"  - {{id: total, description: Join the items, tool: noop, depends_on: [{joined}]}}"
    )
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Config:
    """``processes`` worker processes of ``slots`` slots each."""

    processes: int
    slots: int

    @classmethod
    def parse(cls, text: str) -> Config:
        processes, slots = text.lower().split("x")
        return cls(int(processes), int(slots))

    def __str__(self) -> str:
        return f"{self.processes}x{self.slots}"


@dataclass(frozen=True)
class Scenario:
    name: str
    tool: str
    runs: int
    steps_per_run: int

    @property
    def steps(self) -> int:
        return self.runs * (self.steps_per_run + 1)


def drain(deployment: Deployment, plan: tuple[int, int], runs: int, workers: list) -> float:
    """Start ``runs`` runs of ``plan`` while ``workers`` are paused, let them go, and
    wait for every run: seconds from the first step's start to the last run's success,
    from the stored events.

    The runs start through the web one after another (``POST /runs``); with the workers
    running, the last of 20 runs started seconds after the first on this 2-core machine,
    and the drain measured that instead of the workers. The workers are idle when paused
    (SIGSTOP; a second after the last drain, when their last writes are done) and every
    one resumes at once (SIGCONT); how long starting the runs took is printed apart."""
    time.sleep(1.0)
    for worker in workers:
        worker.send_signal(signal.SIGSTOP)
    try:
        before = time.perf_counter()
        run_ids = [deployment.start_run(*plan) for _ in range(runs)]
        started_in = time.perf_counter() - before
    finally:
        for worker in workers:
            worker.send_signal(signal.SIGCONT)
    if runs > 1:
        print(f"    ({runs} runs started through the web in {started_in:.2f} s)", flush=True)

    def ended() -> bool:
        # The plan's newest runs, as summaries: one small request a second, where a
        # run's detail lists all its steps (the web process shares the machine's cores).
        listed = deployment.api("ada", "GET", f"/runs?plan_id={plan[0]}")["items"]
        status = {run["id"]: run["status"] for run in listed}
        return all(status.get(run_id) in ENDED for run_id in run_ids)

    wait_for(ended, 900, interval=1.0)
    started, finished = [], []
    for run_id in run_ids:
        events = events_of(deployment, run_id)
        times = {e["event_type"]: datetime.fromisoformat(e["created_at"]) for e in events}
        if "run_succeeded" not in times:
            raise AssertionError(f"run {run_id} did not succeed: {sorted(times)}")
        started.append(
            min(
                datetime.fromisoformat(e["created_at"])
                for e in events
                if e["event_type"] == "step_started"
            )
        )
        finished.append(times["run_succeeded"])
    return (max(finished) - min(started)).total_seconds()


def events_of(deployment: Deployment, run_id: int) -> list[dict]:
    """Every event of the run, in pages."""
    events: list[dict] = []
    while page := deployment.api(
        "ada", "GET", f"/runs/{run_id}/events?limit=5000&after={len(events)}"
    ):
        events += page
    return events


_TIMING = re.compile(r"(\w+)=(\d+)/([\d.]+)")


def timings(deployment: Deployment, workers: list) -> dict[str, tuple[int, float]]:
    """The workers' measurements so far, summed (count, ms), from their logs."""
    total: dict[str, tuple[int, float]] = {}
    for worker in workers:
        index = deployment.processes.index(worker)
        log = deployment.root / f"worker-{index}.log"
        before = log.read_text().count("forge-timings")
        worker.send_signal(signal.SIGUSR1)
        wait_for(lambda log=log, before=before: log.read_text().count("forge-timings") > before)
        line = log.read_text().rsplit("forge-timings", 1)[1].splitlines()[0]
        for name, count, ms in _TIMING.findall(line):
            old = total.get(name, (0, 0.0))
            total[name] = (old[0] + int(count), old[1] + float(ms))
    return total


def difference(after: dict, before: dict) -> dict[str, tuple[int, float]]:
    return {
        name: (count - before.get(name, (0, 0.0))[0], ms - before.get(name, (0, 0.0))[1])
        for name, (count, ms) in after.items()
    }


def per_step(used: dict[str, tuple[int, float]], steps: int) -> str:
    return " ".join(f"{name}={ms / steps:.2f}" for name, (_, ms) in sorted(used.items()))


def machine_load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} cores"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kind", choices=("postgres", "sqlite"), default="postgres")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--configs",
        default="1x1,1x4,4x1,1x8,4x8",
        help="worker processes x slots each, comma-separated; the first is the baseline",
    )
    parser.add_argument("--wide", type=int, default=64, help="sleeps in the wide run")
    parser.add_argument("--runs", type=int, default=16, help="runs in the many-runs cases")
    parser.add_argument("--seconds", type=float, default=0.25, help="each sleep")
    parser.add_argument("--noop", type=int, default=400, help="noop steps per case")
    parser.add_argument("--cpu", type=int, default=32, help="cpu steps per case")
    parser.add_argument("--loop", type=int, default=300_000, help="iterations of a cpu step")
    parser.add_argument("--slots-steps", type=int, default=200)
    parser.add_argument("--max-slots", type=int, default=32)
    parser.add_argument("--slots-seconds", type=float, default=0.3)
    parser.add_argument("--quick", action="store_true", help="one round, a fourth the size")
    parser.add_argument(
        "--cases",
        default="wide sleep,wide noop,many noop,wide cpu",
        help="which shapes, comma-separated (also: many sleep, many cpu)",
    )
    parser.add_argument("--no-slots", action="store_true", help="skip the 1 vs many slots")
    options = parser.parse_args()
    if options.quick:
        options.rounds = 1
        options.wide, options.noop, options.cpu, options.slots_steps = 16, 100, 8, 64
    configs = [Config.parse(c) for c in options.configs.split(",")]
    print(f"scale-out on {options.kind}, {time.strftime('%Y-%m-%d %H:%M')}; {machine_load()}")

    sizes = {"sleep": options.wide, "noop": options.noop, "shell": options.cpu}
    tools = {"sleep": "sleep", "noop": "noop", "cpu": "shell"}
    scenarios = []
    for case in options.cases.split(","):
        shape, kind = case.split()
        tool = tools[kind]
        if shape == "wide":
            scenarios.append(Scenario(case, tool, 1, sizes[tool]))
        else:
            scenarios.append(Scenario(case, tool, options.runs, sizes[tool] // options.runs))
    deployment = Deployment(options.kind, Path(tempfile.mkdtemp(prefix="forge-scale-"))).start(
        workers=0
    )
    seconds: dict[tuple[str, Config], list[float]] = {}
    spent: dict[tuple[str, Config], dict[str, tuple[int, float]]] = {}
    try:
        plans = {
            s.name: deployment.approved_plan(
                s.name, fan_out(s.steps_per_run, s.tool, options.seconds, loop=options.loop)
            )
            for s in scenarios
        }
        warm = deployment.approved_plan("warm", fan_out(4, "noop", 0))
        for round_number in range(options.rounds):
            for config in configs:
                workers = [
                    deployment.start_worker(config.slots, timings=True)
                    for _ in range(config.processes)
                ]
                for worker in workers:  # ready: each has logged its slots
                    index = deployment.processes.index(worker)
                    log = deployment.root / f"worker-{index}.log"
                    wait_for(lambda log=log: "steps at once" in log.read_text(), timeout=120)
                # compile the plans' graphs, open connections
                drain(deployment, warm, config.processes, workers)
                for scenario in scenarios:
                    before = timings(deployment, workers)
                    took = drain(deployment, plans[scenario.name], scenario.runs, workers)
                    key = (scenario.name, config)
                    seconds.setdefault(key, []).append(took)
                    used = difference(timings(deployment, workers), before)
                    spent[key] = {
                        name: (
                            spent.get(key, {}).get(name, (0, 0.0))[0] + n,
                            spent.get(key, {}).get(name, (0, 0.0))[1] + ms,
                        )
                        for name, (n, ms) in used.items()
                    }
                    print(
                        f"  round {round_number + 1}: {scenario.name}, {config}: {took:.2f} s",
                        flush=True,
                    )
                for worker in workers:
                    deployment.stop_worker(worker)
        slot_seconds: dict[int, list[float]] = {}
        slots_plan = deployment.approved_plan(
            "slots", fan_out(options.slots_steps, "sleep", options.slots_seconds)
        )
        for round_number in range(0 if options.no_slots else options.rounds):
            for slots in (1, options.max_slots):
                worker = deployment.start_worker(slots, ready=True, timings=True)
                drain(deployment, warm, 1, [worker])
                before = timings(deployment, [worker])
                took = drain(deployment, slots_plan, 1, [worker])
                used = difference(timings(deployment, [worker]), before)
                slot_seconds.setdefault(slots, []).append(took)
                print(f"  round {round_number + 1}: {slots} slot(s): {took:.2f} s", flush=True)
                print(f"    per step (ms): {per_step(used, options.slots_steps + 1)}", flush=True)
                deployment.stop_worker(worker)
    finally:
        deployment.stop()
    report(options, configs, scenarios, seconds, spent, slot_seconds)


def report(options, configs, scenarios, seconds, spent, slot_seconds) -> None:
    print(f"\nMedians of {options.rounds} round(s); {machine_load()}")
    base = configs[0]
    rows = []
    verdicts = []
    for scenario in scenarios:
        first = statistics.median(seconds[(scenario.name, base)])
        for config in configs:
            median = statistics.median(seconds[(scenario.name, config)])
            per_round = [
                f"{b / s:.2f}"
                for b, s in zip(
                    seconds[(scenario.name, base)], seconds[(scenario.name, config)], strict=True
                )
            ]
            rows.append(
                [
                    scenario.name,
                    f"{scenario.runs}x{scenario.steps_per_run + 1}",
                    config.processes,
                    config.slots,
                    config.processes * config.slots,
                    f"{median:.2f}",
                    f"{scenario.steps / median:.0f}",
                    f"{first / median:.2f}x",
                    " ".join(per_round),
                ]
            )
        verdicts.append(knobs(scenario, configs, seconds))
    print_table(
        [
            "case",
            "runs x steps",
            "processes",
            "slots each",
            "slots in all",
            "s",
            "steps/s",
            f"vs {base}",
            "per round",
        ],
        rows,
    )
    print("\nWhere a step's time goes, per step, summed over the workers and slots (ms):")
    names = sorted({name for key, used in spent.items() for name in used})
    rows = []
    for scenario in scenarios:
        for config in configs:
            used = spent[(scenario.name, config)]
            steps = scenario.steps * options.rounds
            rows.append(
                [scenario.name, str(config)]
                + [f"{used.get(name, (0, 0.0))[1] / steps:.2f}" for name in names]
            )
    print_table(["case", "PxS", *names], rows)
    print()
    for verdict in verdicts:
        print(verdict)
    if slot_seconds:
        one = statistics.median(slot_seconds[1])
        many = statistics.median(slot_seconds[options.max_slots])
        ratio = one / many
        print(
            f"One worker, {options.slots_steps} sleeps of {options.slots_seconds} s: "
            f"1 slot {one:.2f} s, {options.max_slots} slots {many:.2f} s: {ratio:.1f}x "
            f"(goal >= {GOAL_SLOTS:.0f}x: {'met' if ratio >= GOAL_SLOTS else 'NOT met'})"
        )


def knobs(scenario: Scenario, configs: list[Config], seconds: dict) -> str:
    """One line per case: what slots added (one process), what processes added (one slot
    each), and issue 13's four workers over one at the same slots each."""

    def median(config: Config) -> float | None:
        found = seconds.get((scenario.name, config))
        return statistics.median(found) if found else None

    base = median(Config(1, 1))
    parts = []
    for config in configs:
        took = median(config)
        if base is None or took is None or config == Config(1, 1):
            continue
        if config.processes == 1:
            parts.append(f"{config.slots} slots in 1 process {base / took:.2f}x")
        elif config.slots == 1:
            parts.append(f"{config.processes} processes of 1 slot {base / took:.2f}x")
    one, four = median(Config(1, 8)), median(Config(4, 8))
    if one is not None and four is not None:
        ratio = one / four
        goal = ""
        if scenario.tool == "sleep":
            goal = f" (goal >= {GOAL_WORKERS}x: {'met' if ratio >= GOAL_WORKERS else 'NOT met'})"
        parts.append(f"4x8 over 1x8 {ratio:.2f}x{goal}")
    return f"{scenario.name}: " + "; ".join(parts) + " (each over 1x1 unless said)"


if __name__ == "__main__":
    main()
