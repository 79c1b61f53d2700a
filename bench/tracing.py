"""What tracing costs the worker path: the same chains of ``noop`` steps run with tracing
off, on, and on with content (``FORGE_TRACE_CONTENT=1``), rounds interleaved in one run,
per step against off. The goal (issue 30): at most 10% more per step.

In this process, over a fresh SQLite database (or, with ``--postgres``, a fresh database
on a PostgreSQL server, as a deployment runs): each round starts a run of a chain of
``--steps`` ``noop`` steps and runs it as a worker's slot does (``runs.worker.run_step``,
which claims each step, runs it and records it, then goes straight on to the next one).
A ``noop`` step is all overhead, so this is the worst case: any real tool's work would
dilute the spans' share. Tracing on is the real thing: the SDK's batch processor
exporting OTLP protobuf over HTTP to a receiver in another process (so decoding the
spans is not charged to the worker), each round's spans flushed before the clock stops.
A fourth mode makes and ends the spans but exports none: the hooks' and the SDK's share,
apart from encoding and sending. Wall time and this process's CPU (the exporter's thread
included) per step; medians over ``--rounds`` rounds of each mode, each
round started with the cyclic collector's work done (outside the clock).

Run: ``.venv/bin/python -m bench.tracing``.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import django
import psycopg
from django.db import connections

GOAL_RATIO = 1.10

# The receiver runs in a process of its own: it prints its endpoint, then, for each line
# read, how many spans it has received.
_RECEIVER = """
import sys
from tests.fixtures.otlp_receiver import OtlpReceiver
receiver = OtlpReceiver().start()
print(receiver.endpoint, flush=True)
for _ in sys.stdin:
    print(len(receiver.received()), flush=True)
"""


class Receiver:
    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", _RECEIVER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=Path(__file__).resolve().parent.parent,
        )
        assert self.process.stdout is not None
        self.endpoint = self.process.stdout.readline().strip()

    def spans(self) -> int:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write("\n")
        self.process.stdin.flush()
        return int(self.process.stdout.readline())

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200, help="steps per chain")
    parser.add_argument("--rounds", type=int, default=7, help="rounds of each mode")
    parser.add_argument(
        "--postgres",
        metavar="URL",
        nargs="?",
        const="postgres://postgres@127.0.0.1:5432/postgres",
        help="over a fresh database of this PostgreSQL server (default: the machine's) "
        "instead of SQLite: the deployment's worker path, where a step costs more",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="forge-bench-tracing-") as directory:
        root = Path(directory)
        if args.postgres:
            with fresh_postgres(args.postgres) as url:
                os.environ["DATABASE_URL"] = url
                measure(args, root)
        else:
            os.environ["DATABASE_URL"] = f"sqlite:///{root / 'tracing.sqlite3'}"
            measure(args, root)


@contextmanager
def fresh_postgres(server: str) -> Iterator[str]:
    """A new database on ``server`` for this run, dropped afterwards."""
    name = f"forge_bench_tracing_{os.getpid()}"
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield server.rsplit("/", 1)[0] + "/" + name
    finally:
        connections.close_all()
        with psycopg.connect(server, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def measure(args: argparse.Namespace, root: Path) -> None:
    os.environ["FORGE_WORKSPACES"] = str(root / "workspaces")
    os.environ["FORGE_AUDIT_ANCHOR_PATH"] = str(root / "anchors.jsonl")
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        os.environ.pop(name, None)  # this process starts with tracing off
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "forge_web.settings")
    django.setup()
    receiver = Receiver()
    try:
        run(args, receiver)
    finally:
        receiver.stop()


def run(args: argparse.Namespace, receiver: Receiver) -> None:
    from django.core.management import call_command
    from opentelemetry.sdk.trace import TracerProvider

    from accounts.models import User
    from bench.common import print_table
    from forge.plan import from_data
    from forge.telemetry.otel import OtelTracing
    from forge.telemetry.setup import tracing_from_env
    from forge.telemetry.switch import install, uninstall
    from plans import services as plan_services
    from runs.models import Run
    from runs.services import start_run
    from runs.worker import run_step

    call_command("migrate", verbosity=0)
    people = {}
    for name, role in (("ada", "author"), ("grace", "approver"), ("linus", "operator")):
        user = User(username=name)
        user.set_roles([role])
        user.set_unusable_password()
        user.save()
        people[name] = user
    steps = [
        {
            "id": f"s{i}",
            "description": f"Pass step {i} along",
            "tool": "noop",
            "depends_on": [f"s{i - 1}"] if i else [],
        }
        for i in range(args.steps)
    ]
    document = from_data({"goal": "Measure tracing", "steps": steps})
    version = plan_services.create_plan(people["ada"], "Tracing bench", document)
    plan_services.approve(version, people["grace"], "measured")
    version.refresh_from_db()

    # Spans made and ended but not exported: the hooks' and the SDK's share of the cost.
    modes: dict[str, Any] = {"off": None, "spans, no export": OtelTracing(TracerProvider())}
    for mode, content in (("on", "0"), ("on, content", "1")):
        environ = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "FORGE_TRACE_CONTENT": content}
        modes[mode] = tracing_from_env(environ)

    def chain(mode: str) -> tuple[float, float]:
        tracing = modes[mode]
        if tracing is None:
            uninstall()
        else:
            install(tracing)
        # A full collection of this process's heap (about 170,000 objects: 60 ms, 0.3 ms
        # a step of the chain) fell due in one round in three, whatever the mode, and
        # made rounds of one mode differ by half: each round starts with none pending.
        gc.collect()
        wall, cpu = time.perf_counter(), time.process_time()
        run = start_run(version, people["linus"])
        run_step(run.pk, "s0")
        if tracing is not None:
            tracing.flush()  # the spans are sent before the clock stops
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        uninstall()
        assert Run.objects.get(pk=run.pk).status == "succeeded"
        return wall / args.steps * 1000, cpu / args.steps * 1000

    for mode in modes:  # warm-up: graphs compiled, runners made, exporters connected
        chain(mode)
    sent = receiver.spans()
    times: dict[str, list[tuple[float, float]]] = {mode: [] for mode in modes}
    order = list(modes)
    for round_ in range(args.rounds):
        # Each round starts one mode further on: no mode always runs right after another
        # (a receiver still decoding the last round's spans, a checkpoint coming due).
        shift = round_ % len(order)
        for mode in order[shift:] + order[:shift]:
            times[mode].append(chain(mode))
    received = receiver.spans() - sent
    # Per exported chain (two modes): the run's span, and a step span and a tool span per step.
    expected = args.rounds * 2 * (1 + 2 * args.steps)

    def median(mode: str, index: int) -> float:
        return statistics.median(t[index] for t in times[mode])

    off_wall, off_cpu = median("off", 0), median("off", 1)

    def spread(mode: str, index: int) -> str:
        """The ratio of each round against the off round of the same round: the lowest
        and highest, what the median hides of a loaded machine's noise."""
        ratios = [t[index] / off[index] for t, off in zip(times[mode], times["off"], strict=True)]
        return f"{min(ratios):.2f}-{max(ratios):.2f}"

    rows = [
        [
            mode,
            f"{median(mode, 0):.3f}",
            f"{median(mode, 0) / off_wall:.3f}",
            spread(mode, 0),
            f"{median(mode, 1):.3f}",
            f"{median(mode, 1) / off_cpu:.3f}",
            spread(mode, 1),
        ]
        for mode in modes
    ]
    database = "PostgreSQL" if args.postgres else "SQLite"
    print(f"{args.steps} noop steps per chain, {args.rounds} rounds of each mode, {database}")
    print_table(
        ["tracing", "ms/step", "x off", "rounds", "CPU ms/step", "CPU x off", "rounds"], rows
    )
    print(f"spans received: {received} of {expected} expected")
    # Wall time and CPU both: on a loaded machine the CPU is what is inflated least.
    for label, index, off in (("wall-time", 0, off_wall), ("CPU", 1, off_cpu)):
        worst = max(median(mode, index) / off for mode in modes)
        verdict = "within" if worst <= GOAL_RATIO else "OVER"
        print(f"worst {label} ratio {worst:.3f}: {verdict} the goal of {GOAL_RATIO:.2f}")
    for tracing in modes.values():
        if tracing is not None:
            tracing.provider.shutdown()


if __name__ == "__main__":
    main()
