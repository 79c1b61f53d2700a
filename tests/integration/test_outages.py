"""Outages of the services themselves (issue 27, item 7), on a private PostgreSQL and Redis:
a 200-step run survives PostgreSQL restarts (0.3 s, and 5 s down while its one POST to an
external system is in flight) and a Redis outage without a person, every event once and
in order, the POST made once; meanwhile the web answers 503 ``database_unavailable`` with
``Retry-After``, and each outage costs a few log lines, not a traceback per request or
step. ``forge_serve`` starts a worker again when it dies."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from .deployment import Deployment, wait_for, watch_run
from .services import PrivatePostgres, PrivateRedis

pytestmark = pytest.mark.slow

STEPS = 200
POST_STEP = 150
# An access log line of uvicorn's: one per request by design, not the noise in question.
ACCESS_LINE = re.compile(r'"[A-Z]+ \S+ HTTP/[0-9.]+" \d{3}')


class CountingServer:
    """The external system: counts the POSTs it receives, answering each after ``hold_s``
    (long enough to take the database away while the step waits for its answer)."""

    def __init__(self, hold_s: float = 1.0) -> None:
        self.posts: list[Any] = []
        self.arrived = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                server.posts.append(json.loads(body or b"null"))
                server.arrived.set()
                time.sleep(hold_s)
                answer = b'{"accepted": true}'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.http.server_address[1]
        threading.Thread(target=self.http.serve_forever, daemon=True).start()


def _plan(port: int | None) -> str:
    lines = ["goal: Prepare the supplier orders and tell the supplier once", "steps:"]
    for i in range(STEPS):
        after = f", depends_on: [s{i - 1}]" if i else ""
        if i == POST_STEP and port is not None:
            lines.append(
                f"  - {{id: s{i}, description: Send the order to the supplier, "
                f"tool: http_request, args: {{method: POST, "
                f'url: "http://127.0.0.1:{port}/orders", body: {{order: 42}}}}{after}}}'
            )
        else:
            lines.append(
                f"  - {{id: s{i}, description: Prepare order line {i}, tool: echo, "
                f"args: {{line: {i}}}{after}}}"
            )
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def postgres() -> Iterator[PrivatePostgres]:
    server = PrivatePostgres()
    server.start()
    yield server
    server.remove()


@pytest.fixture(scope="module")
def redis(tmp_path_factory) -> Iterator[PrivateRedis]:
    server = PrivateRedis(tmp_path_factory.mktemp("redis"))
    server.start()
    yield server
    if server.process is not None and server.process.poll() is None:
        server.kill()


@pytest.fixture(scope="module")
def supplier() -> CountingServer:
    return CountingServer()


@pytest.fixture(scope="module")
def deployment(postgres, redis, supplier, tmp_path_factory) -> Iterator[Deployment]:
    running = Deployment(
        "postgres",
        tmp_path_factory.mktemp("outages"),
        redis_url=redis.url,
        postgres_url=postgres.url,
        extra_env={
            "FORGE_HTTP_ALLOWED_HOSTS": f"127.0.0.1:{supplier.port}",
            "FORGE_DB_OUTAGE_SECONDS": "60",
        },
    )
    try:
        yield running.start()
    finally:
        running.stop()
        print(running.logs())


class Logs:
    """What the deployment's processes log from now on."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.start = {path: path.stat().st_size for path in root.glob("*.log")}

    def since(self, name: str) -> list[str]:
        """Lines of the process logs whose names start with ``name`` written since, less
        the web server's access log."""
        lines: list[str] = []
        for path in sorted(self.root.glob(f"{name}-*.log")):
            with path.open("rb") as log:
                log.seek(self.start.get(path, 0))
                text = log.read().decode(errors="replace")
            lines += [line for line in text.splitlines() if not ACCESS_LINE.search(line)]
        return lines


def _assert_few_lines(lines: list[str], outage: str) -> None:
    assert len(lines) < 20, f"{len(lines)} log lines for {outage}:\n" + "\n".join(lines[:60])
    assert not [line for line in lines if "Traceback" in line], "\n".join(lines)


def _poll_while_down(deployment: Deployment, run_id: int, seconds: float) -> list[Any]:
    answers = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        answers.append(
            httpx.get(
                f"{deployment.base}/api/v1/runs/{run_id}",
                headers={"Authorization": f"Bearer {deployment.tokens['ada']}"},
                timeout=10,
            )
        )
        time.sleep(0.2)
    return answers


def _assert_gapless(deployment: Deployment, run_id: int) -> int:
    seqs = [e["seq"] for e in deployment.api("ada", "GET", f"/runs/{run_id}/events?limit=5000")]
    assert seqs == list(range(1, len(seqs) + 1))
    assert deployment.run(run_id)["last_seq"] == len(seqs)
    return len(seqs)


def test_a_run_survives_postgresql_restarts_with_its_post_made_once_and_503s_meanwhile(
    deployment, postgres, supplier
):
    worker = deployment.workers[0]
    plan_id, number = deployment.approved_plan("Supplier orders", _plan(supplier.port))
    run_id = deployment.start_run(plan_id, number)
    wait_for(lambda: deployment.run(run_id)["last_seq"] >= 60, interval=0.02)

    # A restart: 0.3 s without a server.
    first = Logs(deployment.root)
    postgres.stop()
    time.sleep(0.3)
    postgres.start()
    deployment.wait_status(run_id, "awaiting_approval")  # its POST waits for a person
    worker_lines_first, web_lines_first = first.since("worker"), first.since("web")
    deployment.api("grace", "POST", f"/runs/{run_id}/steps/s{POST_STEP}/approve", {})

    # 5 s without a server, taken away while the POST waits for its answer.
    assert supplier.arrived.wait(30)
    second = Logs(deployment.root)
    postgres.stop()
    answers = _poll_while_down(deployment, run_id, 5.0)
    postgres.start()
    final = deployment.wait_status(run_id, "succeeded", "needs_reconciliation", timeout=120)

    assert final["status"] == "succeeded"  # nobody was asked to reconcile the POST
    assert supplier.posts == [{"order": 42}]
    _assert_gapless(deployment, run_id)
    assert worker.poll() is None  # the same worker rode both out
    # Answered at once, not after waiting out a connect timeout (how many polls fit in the
    # 5 s depends on the machine's load, so the count is not the measure).
    assert len(answers) >= 3
    assert all(a.elapsed.total_seconds() < 3 for a in answers)
    assert {a.status_code for a in answers} == {503}
    assert {a.json()["code"] for a in answers} == {"database_unavailable"}
    assert all(1 <= int(a.headers["Retry-After"]) <= 30 for a in answers)
    _assert_few_lines(worker_lines_first, "a 0.3 s restart (worker)")
    _assert_few_lines(web_lines_first, "a 0.3 s restart (web)")
    _assert_few_lines(second.since("worker"), "5 s down (worker)")
    _assert_few_lines(second.since("web"), "5 s down (web)")
    assert any("the database is back after" in line for line in second.since("worker"))


def test_a_run_survives_redis_stopped_mid_run_and_watchers_get_every_event(deployment, redis):
    plan_id, number = deployment.approved_plan("Supplier lines", _plan(None))
    run_id = deployment.start_run(plan_id, number)

    async def through_the_outage() -> list[list[int]]:
        watchers = [asyncio.create_task(watch_run(deployment, run_id)) for _ in range(3)]
        await asyncio.to_thread(
            wait_for, lambda: deployment.run(run_id)["last_seq"] >= 60, 30, 0.02
        )
        logs = Logs(deployment.root)
        redis.kill()
        await asyncio.sleep(3)
        redis.start()
        await asyncio.to_thread(deployment.wait_status, run_id, "succeeded")
        seqs = await asyncio.wait_for(asyncio.gather(*watchers), timeout=30)
        _assert_few_lines(logs.since("worker"), "Redis stopped (worker)")
        _assert_few_lines(logs.since("web"), "Redis stopped (web)")
        return list(seqs)

    watched = asyncio.run(through_the_outage())

    last = _assert_gapless(deployment, run_id)
    for seqs in watched:
        assert seqs == list(range(1, last + 1))


SHORT_PLAN = """
goal: Prepare one supplier order line
steps:
  - {id: line, description: Prepare the order line, tool: echo, args: {line: 1}}
"""


def _children(pid: int) -> list[int]:
    children = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(child) for child in children.read_text().split()]


def _worker_of(serve: Any) -> int | None:
    for child in _children(serve.pid):
        cmdline = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
        if b"forge_worker" in cmdline:
            return child
    return None


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Iterator[Deployment]:
    running = Deployment("sqlite", tmp_path_factory.mktemp("served"))
    try:
        yield running.start(serve=True)
    finally:
        running.stop()
        print(running.logs())


def test_forge_serve_starts_a_worker_again_when_it_dies(served):
    assert served.web is not None
    killed = wait_for(lambda: _worker_of(served.web))

    os.kill(killed, signal.SIGKILL)

    again = wait_for(lambda: (pid := _worker_of(served.web)) not in (None, killed) and pid)
    plan_id, number = served.approved_plan("Supplier line", SHORT_PLAN)
    run_id = served.start_run(plan_id, number)

    assert served.wait_status(run_id, "succeeded")["status"] == "succeeded"
    assert served.web.poll() is None and again != killed
    log = "\n".join(path.read_text(errors="replace") for path in served.root.glob("serve-*.log"))
    assert f"a worker (pid {killed}) stopped with exit status -9; starting it again" in log
