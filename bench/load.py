"""Logged-in users over pages and API against one web process on PostgreSQL + Redis, with
the connection pool (``FORGE_DB_POOL=1``, the default) and without it (the baseline: a
connection per request thread kept for ``CONN_MAX_AGE`` = 600 s, as before issue 27),
both in the same run.

Each deployment is one web process (``python -m forge_web.serve``: uvicorn) and no
worker, over the demo's database on a PostgreSQL server of its own (``--server private``,
the default: ``max_connections`` 100 like the shared server's, so the baseline cannot
starve anyone else; ``--server shared`` uses the machine's) and Redis as the channel
layer and cache. ``--users`` people each log in through the login form, then go round
the pages (home, runs, plans, a plan's version, a run, the inbox) and the API
(runs, plans, a run, me) with their session, pausing ``--think`` seconds between
requests, for ``--warmup`` seconds and then ``--duration`` measured seconds. Only the web
process connects to its database, so ``pg_stat_activity`` rows of that database are its
connections.

Printed per deployment: requests, errors (any answer but 200, or none within 30 s),
p50/p99 latency, the most connections the web process held during the load and how many
it holds once the load stopped, its resident memory after the warm-up and at the end,
and the load average.

Goal (issue 27, item 3): with the pool, 0 errors, p99 under 1 s on this machine,
connections never above the pool's size (``FORGE_DB_POOL_MAX``), memory flat after the
warm-up.

Run: ``python -m bench.load [--users 50] [--duration 60] [--warmup 10] [--think 0.5]
[--modes pool,no-pool] [--server private|shared] [--pool-max 10]``.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import re
import statistics
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg

from bench.common import print_table
from bench.crowd import rss_mib
from tests.integration.deployment import POSTGRES, Deployment
from tests.integration.services import PrivatePostgres

DEMO_USER, DEMO_PASSWORD = "ada", "forge-demo-2026"
GOAL_P99_MS = 1000.0
_CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


@dataclass
class Tally:
    """What the users saw: latencies of good answers and a count of bad ones."""

    measuring: bool = False
    latencies_ms: list[float] = field(default_factory=list)
    errors: int = 0
    requests: int = 0
    first_error: str = ""

    def note(self, started: float, error: str = "") -> None:
        if not self.measuring:
            return
        self.requests += 1
        if error:
            self.errors += 1
            self.first_error = self.first_error or error
        else:
            self.latencies_ms.append((time.perf_counter() - started) * 1000)


async def _log_in(client: httpx.AsyncClient) -> None:
    form = await client.get("/accounts/login/")
    token = _CSRF.search(form.text)
    assert token is not None, f"no login form ({form.status_code})"
    answer = await client.post(
        "/accounts/login/",
        data={
            "username": DEMO_USER,
            "password": DEMO_PASSWORD,
            "csrfmiddlewaretoken": token.group(1),
        },
    )
    assert answer.status_code == 302, f"login refused ({answer.status_code})"


async def _user(client: httpx.AsyncClient, paths: list[str], think_s: float, tally: Tally,
                stop: asyncio.Event, offset: int) -> None:  # fmt: skip
    # Each user starts the round at another page, as a crowd would.
    for path in itertools.islice(itertools.cycle(paths), offset, None):
        if stop.is_set():
            return
        started = time.perf_counter()
        try:
            answer = await client.get(path)
        except httpx.HTTPError as error:
            tally.note(started, f"{path}: {type(error).__name__}")
        else:
            tally.note(started, "" if answer.status_code == 200 else
                       f"{path}: {answer.status_code}")  # fmt: skip
        await asyncio.sleep(think_s)


def _paths(deployment: Deployment) -> list[str]:
    plans = deployment.api("ada", "GET", "/plans")
    runs = deployment.api("ada", "GET", "/runs")
    plan = (plans.get("items") or [{}])[0]
    run = (runs.get("items") or [{}])[0].get("id")
    pages = ["/", "/runs/", "/plans/", "/inbox/"]
    api = ["/api/v1/runs", "/api/v1/plans", "/api/v1/me"]
    if (latest := plan.get("latest_version")) is not None:
        pages.append(f"/plans/{plan['id']}/versions/{latest['number']}/")
    if run is not None:
        pages.append(f"/runs/{run}/")
        api.append(f"/api/v1/runs/{run}")
    # Pages and API calls interleaved.
    return [p for pair in itertools.zip_longest(pages, api) for p in pair if p]


class Connections:
    """The web process's PostgreSQL connections, sampled every half second on a
    connection opened beforehand (the baseline can leave the server none to open), to
    the server's maintenance database: not one of the web's."""

    def __init__(self, server_url: str, database: str) -> None:
        self._conn = psycopg.connect(server_url, autocommit=True)
        self._lock = threading.Lock()
        self._database = database
        self.most = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def count(self) -> int:
        with self._lock:
            row = self._conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = %s", (self._database,)
            ).fetchone()
        return int(row[0]) if row else 0

    def _sample(self) -> None:
        while not self._stop.wait(0.5):
            self.most = max(self.most, self.count())

    def __enter__(self) -> Connections:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def close(self) -> None:
        self._conn.close()


async def _load(deployment: Deployment, args: argparse.Namespace) -> dict[str, Any]:
    assert deployment.web is not None
    pid = deployment.web.pid
    paths = _paths(deployment)
    tally = Tally()
    stop = asyncio.Event()
    clients = [httpx.AsyncClient(base_url=deployment.base, timeout=30) for _ in range(args.users)]
    # Everybody logs in first, a few at a time (a password hash is CPU), then the load
    # starts together.
    for first in range(0, len(clients), 5):
        await asyncio.gather(*(_log_in(client) for client in clients[first : first + 5]))
    users = [
        asyncio.create_task(_user(client, paths, args.think, tally, stop, n))
        for n, client in enumerate(clients)
    ]
    database = deployment.env["DATABASE_URL"].rsplit("/", 1)[1]
    server = deployment.postgres_url
    with Connections(server, database) as connections:
        await asyncio.sleep(args.warmup)
        rss_warm = rss_mib(pid, "VmRSS:")
        tally.measuring = True
        await asyncio.sleep(args.duration)
        tally.measuring = False
        stop.set()
        await asyncio.gather(*users)
        for client in clients:
            await client.aclose()
    rss_end = rss_mib(pid, "VmRSS:")
    await asyncio.sleep(1)
    held_after = connections.count()
    connections.close()
    latencies = tally.latencies_ms
    return {
        "requests": tally.requests,
        "errors": tally.errors,
        "first_error": tally.first_error,
        "p50": statistics.median(latencies) if latencies else float("nan"),
        "p99": statistics.quantiles(latencies, n=100)[98] if len(latencies) > 1 else float("nan"),
        "most": connections.most,
        "after": held_after,
        "rss_warm": rss_warm,
        "rss_end": rss_end,
    }


def _deployment(mode: str, server_url: str, pool_max: int) -> Deployment:
    env = {"FORGE_DB_POOL": "1" if mode == "pool" else "0", "FORGE_DB_POOL_MAX": str(pool_max)}
    root = Path(tempfile.mkdtemp(prefix=f"forge-load-{mode}-"))
    return Deployment("postgres", root, postgres_url=server_url, extra_env=env)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--duration", type=float, default=60.0, help="measured seconds")
    parser.add_argument("--warmup", type=float, default=10.0, help="seconds before measuring")
    parser.add_argument("--think", type=float, default=0.5, help="a user's pause, seconds")
    parser.add_argument("--modes", default="pool,no-pool")
    parser.add_argument("--server", choices=("private", "shared"), default="private")
    parser.add_argument("--pool-max", type=int, default=10, help="FORGE_DB_POOL_MAX")
    args = parser.parse_args()

    private = None
    if args.server == "private":
        private = PrivatePostgres(max_connections=100)
        private.start()
    server_url = private.url if private else POSTGRES
    rows = []
    try:
        for mode in args.modes.split(","):
            deployment = _deployment(mode, server_url, args.pool_max).start(workers=0)
            try:
                result = asyncio.run(_load(deployment, args))
            finally:
                deployment.stop()
            if result["first_error"]:
                print(f"  [{mode}] first error: {result['first_error']}")
            pool_ok = mode != "pool" or result["most"] <= args.pool_max
            met = result["errors"] == 0 and result["p99"] < GOAL_P99_MS and pool_ok
            rows.append([
                mode, args.users, result["requests"], result["errors"],
                f"{result['p50']:.0f}", f"{result['p99']:.0f}", result["most"], result["after"],
                f"{result['rss_warm']:.0f}", f"{result['rss_end']:.0f}",
                ("met" if met else "NOT met") if mode == "pool" else "baseline",
            ])  # fmt: skip
    finally:
        if private is not None:
            private.remove()
    load = os.getloadavg()
    print(
        f"\n{args.users} users, {args.duration:.0f} s measured after {args.warmup:.0f} s of "
        f"warm-up, {args.think} s between a user's requests, one web process, "
        f"{args.server} PostgreSQL (max_connections 100) + Redis; pool max {args.pool_max}"
    )
    print(f"load average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (2 cores)")
    print_table(
        ["web", "users", "requests", "errors", "p50 ms", "p99 ms", "conns max",
         "conns after", "RSS warm MiB", "RSS end MiB", "goal"],
        rows,
    )  # fmt: skip
    print(f"goal: 0 errors, p99 < {GOAL_P99_MS:.0f} ms, connections <= the pool's size")


if __name__ == "__main__":
    main()
