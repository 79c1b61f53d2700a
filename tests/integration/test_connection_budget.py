"""Workers and PostgreSQL's max_connections (issue 27, item 4), on a private server of 20
connections: a worker whose slots cannot fit is refused at start with one line naming
``FORGE_WORKER_CONCURRENCY`` and ``max_connections`` (exit status 2, no traceback), and a
worker that meets "too many clients" later backs off, says so once, and finishes its run
once connections are free again."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import psycopg
import pytest

from .deployment import REPO, Deployment, wait_for
from .services import PrivatePostgres

pytestmark = pytest.mark.slow

MAX_CONNECTIONS = 20

PLAN = """
goal: Prepare three supplier order lines
steps:
  - {id: a, description: Prepare line a, tool: echo, args: {line: a}}
  - {id: b, description: Prepare line b, tool: echo, args: {line: b}, depends_on: [a]}
  - {id: c, description: Prepare line c, tool: echo, args: {line: c}, depends_on: [b]}
"""


@pytest.fixture(scope="module")
def postgres() -> Iterator[PrivatePostgres]:
    server = PrivatePostgres(max_connections=MAX_CONNECTIONS)
    server.start()
    yield server
    server.remove()


def test_a_worker_whose_slots_cannot_fit_is_refused_in_one_line_with_exit_status_2(postgres):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO", "PYTEST"))}
    env.update(DATABASE_URL=postgres.url, DJANGO_SETTINGS_MODULE="forge_web.settings")
    env.pop("REDIS_URL", None)

    worker = subprocess.run(
        [sys.executable, "manage.py", "forge_worker", "--concurrency", "40"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert worker.returncode == 2, worker.stderr
    lines = [line for line in (worker.stdout + worker.stderr).splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert "FORGE_WORKER_CONCURRENCY=40" in lines[0]
    assert f"max_connections={MAX_CONNECTIONS}" in lines[0]
    assert "Traceback" not in worker.stderr


@pytest.fixture(scope="module")
def deployment(postgres, tmp_path_factory) -> Iterator[Deployment]:
    running = Deployment(
        "postgres",
        tmp_path_factory.mktemp("budget"),
        postgres_url=postgres.url,
        extra_env={"FORGE_DB_POOL_MIN": "1", "FORGE_DB_POOL_MAX": "3"},
    )
    try:
        yield running.start(workers=0)
    finally:
        running.stop()
        print(running.logs())


def _hog(postgres: PrivatePostgres) -> list[psycopg.Connection]:
    """Every connection the server still gives, held."""
    held: list[psycopg.Connection] = []
    while len(held) <= MAX_CONNECTIONS:
        try:
            held.append(psycopg.connect(postgres.url, autocommit=True, connect_timeout=5))
        except psycopg.OperationalError as error:
            if "too many clients" in str(error):
                return held
            break
    for each in held:
        each.close()
    raise AssertionError("the server never refused a client")


def test_a_worker_that_meets_too_many_clients_backs_off_says_so_once_and_finishes(
    deployment, postgres
):
    worker = deployment.start_worker(concurrency=2, ready=True)
    log = deployment.root / f"worker-{deployment.processes.index(worker)}.log"
    plan_id, number = deployment.approved_plan("Supplier lines", PLAN)
    # Stopped while its connections are taken from it and the server is filled, so that
    # the worker meets a full server when it goes on, not a free slot first.
    worker.send_signal(signal.SIGSTOP)
    run_id = deployment.start_run(plan_id, number)
    mark = log.stat().st_size
    with psycopg.connect(postgres.url, autocommit=True) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = %s AND pid <> pg_backend_pid()",
            (deployment.env["DATABASE_URL"].rsplit("/", 1)[1],),
        )
    held = _hog(postgres)
    try:
        worker.send_signal(signal.SIGCONT)
        time.sleep(6)
        assert worker.poll() is None, log.read_text()[-3000:]
        during = log.read_bytes()[mark:].decode(errors="replace")
    finally:
        for each in held:
            each.close()

    final = deployment.wait_status(run_id, "succeeded", "failed", timeout=60)

    assert final["status"] == "succeeded"
    assert worker.poll() is None
    backing_off = [line for line in during.splitlines() if "backing off" in line]
    assert len(backing_off) == 1, during
    assert "too many clients" in backing_off[0]
    assert "Traceback" not in during
    after = log.read_bytes()[mark:].decode(errors="replace")
    assert "Traceback" not in after
    wait_for(lambda: "the database is back after" in log.read_text(), timeout=10)
