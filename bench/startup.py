"""How long Forge takes from launch to answering: the web server, a worker, and the CLI.

Each is launched as ``make run`` and a user launch it, on a warm machine (the database
migrated, bytecode cached: one untimed launch of each first), several rounds, medians:

- web: ``python -m forge_web.serve`` until ``GET /`` gets an HTTP answer (goal 3 s);
- worker: ``manage.py forge_worker --no-startup-delay`` (as ``make run`` starts its one
  worker; several wait up to 1 s at random first, so as not to poll in step) until it
  claims a task queued before it started (goal 3 s);
- ``forge --help`` and ``forge compile`` of a one-step JSON plan, to exit (goal 150 ms
  each), next to ``python -c pass``, the interpreter's own start, timed in the same run;
- ``forge run`` of a three-step plan without agent steps (``echo`` steps, approved with
  ``--approve-as``) against ``forge compile`` of the same plan, each beyond the bare
  interpreter: the run may cost at most 1.3 times what compiling costs (issue 27).

The commands are timed interleaved (each round runs every one of them once), so that a
change in the machine's load reaches all of them alike.

A temporary SQLite database serves the web and the worker. On a shared machine other
work stretches every wall-clock time: the CPU time of the CLI commands is printed too,
and the load average before and after. Run with ``python -m bench.startup``
(``--rounds N``).
"""

from __future__ import annotations

import argparse
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SERVER_GOAL_S = 3.0
CLI_GOAL_MS = 150.0
RUN_GOAL_RATIO = 1.3
CLI_GOALS = ("forge --help", "forge compile (1 step)")
RUN_VS_COMPILE = ("forge run (3 steps)", "forge compile (3 steps)", "python -c pass")
ONE_STEP = '{"goal": "one", "steps": [{"id": "a", "description": "say hi", "tool": "noop"}]}'
THREE_ECHOES = (
    '{"goal": "three", "steps": ['
    '{"id": "a", "description": "say a", "tool": "echo", "args": {"text": "a"}}, '
    '{"id": "b", "description": "say b", "tool": "echo", "args": {"text": "b"}, '
    '"depends_on": ["a"]}, '
    '{"id": "c", "description": "say c", "tool": "echo", "args": {"text": "c"}, '
    '"depends_on": ["b"]}]}'
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="launches of each server")
    parser.add_argument("--cli-rounds", type=int, default=15, help="runs of each command")
    args = parser.parse_args()
    print(f"load average before: {_load()}")
    with tempfile.TemporaryDirectory(prefix="forge-bench-startup-") as directory:
        env = _environment(Path(directory))
        subprocess.run(
            [sys.executable, "manage.py", "migrate", "--no-input", "-v", "0"],
            cwd=REPO, env=env, check=True, capture_output=True,
        )  # fmt: skip
        plan = Path(directory) / "one.json"
        plan.write_text(ONE_STEP)
        three = Path(directory) / "three.json"
        three.write_text(THREE_ECHOES)
        forge = [sys.executable, "-m", "forge.cli"]
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "forge --help": [*forge, "--help"],
            "forge compile (1 step)": [*forge, "compile", str(plan)],
            "forge compile (3 steps)": [*forge, "compile", str(three)],
            "forge run (3 steps)": [*forge, "run", str(three), "--approve-as", "bench"],
        }
        times = _command_times(commands, env, args.cli_rounds)
        rows = []
        for name, (wall, cpu) in times.items():
            goal = _verdict(wall, CLI_GOAL_MS, "ms") if name in CLI_GOALS else ""
            rows.append((name, f"{wall:.0f} ms", f"{cpu:.0f} ms", goal))
        run, compiled, bare = (times[name] for name in RUN_VS_COMPILE)
        wall_ratio, cpu_ratio = ((run[i] - bare[i]) / (compiled[i] - bare[i]) for i in (0, 1))
        for name, launch in (("web (GET / answered)", _web), ("worker (task claimed)", _worker)):
            launch(env)  # warm: bytecode written, files in the page cache
            seconds = statistics.median(launch(env) for _ in range(args.rounds))
            rows.append((name, f"{seconds:.2f} s", "", _verdict(seconds, SERVER_GOAL_S, "s")))
    print(f"medians; {args.cli_rounds} runs of each command, {args.rounds} launches of each server")
    print(f"{'':<24} {'wall':>9} {'cpu':>8}  goal")
    for name, wall, cpu, goal in rows:
        print(f"{name:<24} {wall:>9} {cpu:>8}  {goal}")
    print(
        f"forge run / forge compile (3 steps), each beyond python -c pass: {wall_ratio:.2f}x "
        f"wall, {cpu_ratio:.2f}x cpu  {_verdict(wall_ratio, RUN_GOAL_RATIO, 'x')}"
    )
    print(f"load average after: {_load()}")


def _environment(directory: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO", "FORGE_"))}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # a warm machine has its bytecode cached
    env["DATABASE_URL"] = f"sqlite:///{directory / 'startup.sqlite3'}"
    env["DJANGO_SETTINGS_MODULE"] = "forge_web.settings"
    return env


def _command_times(
    commands: dict[str, list[str]], env: dict[str, str], rounds: int
) -> dict[str, tuple[float, float]]:
    """Median wall and CPU milliseconds of each command, run interleaved: every round
    runs each command once (after one untimed round)."""
    walls: dict[str, list[float]] = {name: [] for name in commands}
    cpus: dict[str, list[float]] = {name: [] for name in commands}
    for index in range(rounds + 1):
        for name, command in commands.items():
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            started = time.perf_counter()
            subprocess.run(command, env=env, cwd=REPO, capture_output=True, check=True)
            wall = time.perf_counter() - started
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if index:
                walls[name].append(wall * 1000)
                cpus[name].append(
                    (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000
                )
    return {
        name: (statistics.median(walls[name]), statistics.median(cpus[name])) for name in commands
    }


def _web(env: dict[str, str]) -> float:
    port = _free_port()
    url = f"http://127.0.0.1:{port}/"
    command = [sys.executable, "-m", "forge_web.serve", "--port", str(port)]
    return _launch(command, env, lambda: _answers(url))


def _worker(env: dict[str, str]) -> float:
    # The task is queued by a child process, so that this one never sets Django up.
    queue = (
        "import django; django.setup(); from runs.tasks import run_step; "
        "from django_tasks_db.models import DBTaskResult; "
        "print(DBTaskResult._meta.db_table, run_step.enqueue(0, 'startup-bench').id)"
    )
    table, queued = subprocess.run(
        [sys.executable, "-c", queue], env=env, cwd=REPO, capture_output=True, text=True,
        check=True,
    ).stdout.split()[-2:]  # fmt: skip
    check = [
        sys.executable, "-c",
        "import sys, django; django.setup(); from django_tasks_db.models import DBTaskResult; "
        "sys.exit(DBTaskResult.objects.filter(id=sys.argv[1], status='READY').exists())",
        queued,
    ]  # fmt: skip
    path = Path(env["DATABASE_URL"].removeprefix("sqlite:///"))
    command = [sys.executable, "manage.py", "forge_worker", "--no-startup-delay"]
    return _launch(command, env, lambda: _claimed(path, table, queued), after=check)


def _launch(
    command: list[str],
    env: dict[str, str],
    ready: Callable[[], bool],
    after: list[str] | None = None,
) -> float:
    started = time.perf_counter()
    process = subprocess.Popen(
        command, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        while not ready():
            if process.poll() is not None:
                raise SystemExit(f"{' '.join(command)} exited with {process.returncode}")
            if time.perf_counter() - started > 120:
                raise SystemExit(f"{' '.join(command)} did not answer within 120 s")
            time.sleep(0.02)
        return time.perf_counter() - started
    finally:
        process.terminate()
        process.wait(timeout=30)
        if after is not None:  # the claim seen by Django too, not only in the file
            subprocess.run(after, cwd=REPO, env=env, check=True, capture_output=True)


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5):
            return True
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False


def _claimed(database: Path, table: str, task_id: str) -> bool:
    """Whether the worker took the task: read with sqlite3, not Django, so that polling
    costs the machine next to nothing while the worker starts."""
    import sqlite3

    with sqlite3.connect(database, timeout=1) as connection:
        try:
            row = connection.execute(
                f"SELECT status FROM {table} WHERE id = ?",  # noqa: S608 (Django's own name)
                (task_id.replace("-", ""),),
            ).fetchone()
        except sqlite3.OperationalError:  # locked by the worker's claim: look again
            return False
    return row is not None and row[0] != "READY"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _verdict(value: float, goal: float, unit: str) -> str:
    return f"<= {goal:g} {unit}: {'met' if value <= goal else 'MISSED'}"


def _load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg()) + f" ({os.cpu_count()} cores)"


if __name__ == "__main__":
    main()
