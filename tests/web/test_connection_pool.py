"""PostgreSQL's connection pool (``forge_web.postgresql``, issue 27 item 3): a pool timeout
and a server out of connections are the database being unavailable, answered 503
``database_unavailable`` with ``Retry-After``; a thread waits for a busy pool but not for
one whose server is away; a worker's pool is sized by its slots (``runs.capacity``)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import psycopg.errors
import pytest
from django.db import OperationalError, connection
from django.test import Client
from psycopg_pool import ConnectionPool, PoolTimeout

from accounts import outages
from accounts.outages import DATABASE
from forge_web.postgresql.base import Checkout, NotedConnection
from runs import capacity
from runs.capacity import OWN_CONNECTIONS, ServerConnections, fit_pool, read_server, refusal
from tests.integration.deployment import free_port


def _wrapped(cause: BaseException) -> Exception:
    try:
        raise OperationalError(str(cause)) from cause
    except Exception as error:
        return error


SERVER_FULL = [
    _wrapped(PoolTimeout("couldn't get a connection after 10.00 sec")),
    _wrapped(psycopg.errors.TooManyConnections("sorry, too many clients already")),
]


@pytest.fixture(autouse=True)
def no_outage_before_or_after() -> Iterator[None]:
    DATABASE.recovered()
    yield
    DATABASE.recovered()


def _raising(error: Exception) -> Any:
    def execute(*args: Any) -> Any:
        raise error

    return execute


@pytest.mark.django_db
@pytest.mark.parametrize("error", SERVER_FULL, ids=["pool timeout", "too many clients"])
def test_an_exhausted_pool_or_server_is_answered_503_with_retry_after(
    api_client, author, viewer, error, caplog
):
    api = api_client(author)
    pages = Client(raise_request_exception=False)
    pages.force_login(viewer)
    caplog.set_level(logging.INFO)

    with connection.execute_wrapper(_raising(error)):
        answer, page = api.get("/api/v1/runs"), pages.get("/runs/")

    assert (answer.status_code, page.status_code) == (503, 503)
    assert answer.json()["code"] == "database_unavailable"
    assert 1 <= int(answer["Retry-After"]) <= 30 and int(page["Retry-After"]) >= 1
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]


@pytest.mark.django_db
def test_a_page_error_while_the_database_is_known_away_is_a_503_without_asking_again(viewer):
    pages = Client(raise_request_exception=False)
    pages.force_login(viewer)
    asked: list[str] = []

    def broken_view(execute: Any, sql: str, *args: Any) -> Any:
        asked.append(sql)
        raise RuntimeError("a page that failed while the pool had no connection for it")

    DATABASE.failed(PoolTimeout("no connection free in the pool within 10 s"))
    with connection.execute_wrapper(broken_view):
        page = pages.get("/runs/")

    assert page.status_code == 503
    assert "SELECT 1" not in asked  # handler500 did not wait for the pool again


@pytest.mark.django_db
def test_too_many_clients_is_logged_once_as_backing_off(api_client, author, caplog):
    client = api_client(author)
    caplog.set_level(logging.INFO)

    with connection.execute_wrapper(_raising(SERVER_FULL[1])):
        for _ in range(3):
            client.get("/api/v1/runs")

    lines = [r.getMessage() for r in caplog.records if r.name == "forge.outages"]
    assert lines == [
        "the database is unavailable (too many clients: the server's max_connections is "
        "reached; backing off and connecting again)"
    ]


@pytest.mark.django_db
def test_a_full_server_is_said_once_even_when_the_outage_began_otherwise(
    api_client, author, caplog
):
    client = api_client(author)
    caplog.set_level(logging.INFO)
    cut = _wrapped(psycopg.OperationalError("server closed the connection unexpectedly"))

    with connection.execute_wrapper(_raising(cut)):
        client.get("/api/v1/runs")
    with connection.execute_wrapper(_raising(SERVER_FULL[1])):
        for _ in range(3):
            client.get("/api/v1/runs")

    lines = [r.getMessage() for r in caplog.records if r.name == "forge.outages"]
    assert len(lines) == 2
    assert "server closed the connection" in lines[0]
    assert "too many clients" in lines[1] and "backing off" in lines[1]


def test_threads_that_meet_a_full_server_at_once_say_it_once(monkeypatch, caplog):
    """The claim loop and a slot met a full server in the same millisecond and both said
    so (the outage's start and its fullness were decided apart). The thread that starts
    the outage is held up right after, to let the other in where it came in then."""
    caplog.set_level(logging.INFO)
    failed = DATABASE.failed

    def slow_start(error: Any) -> bool:
        started = failed(error)
        if started:
            time.sleep(0.2)
        return started

    monkeypatch.setattr(DATABASE, "failed", slow_start)
    full = SERVER_FULL[1]
    threads = [threading.Thread(target=outages.note_outage, args=(full,)) for _ in range(4)]
    for thread in threads:
        thread.start()
        time.sleep(0.02)
    for thread in threads:
        thread.join()

    lines = [r.getMessage() for r in caplog.records if r.name == "forge.outages"]
    assert len(lines) == 1 and "too many clients" in lines[0], lines


# --- The pool itself, on a real server ---------------------------------------------------


def _pool(conninfo: str, **options: Any) -> Checkout:
    pool: ConnectionPool[Any] = ConnectionPool(
        conninfo, connection_class=NotedConnection, open=True, **options
    )
    return Checkout(pool)


def _test_database() -> str:
    params = connection.get_connection_params()
    return psycopg.conninfo.make_conninfo(
        "", **{k: params[k] for k in ("dbname", "user", "host", "port") if k in params}
    )


@pytest.mark.postgres
@pytest.mark.django_db
def test_a_thread_waits_for_a_busy_pool_and_gets_the_connection_given_back():
    checkout = _pool(_test_database(), min_size=1, max_size=1, timeout=10)
    try:
        held = checkout.getconn()
        threading.Timer(0.5, checkout.putconn, args=(held,)).start()

        again = checkout.getconn()

        assert again is held  # the one connection, handed on: no second was opened
        checkout.putconn(again)
        assert not DATABASE.down
    finally:
        checkout.close()


@pytest.mark.postgres
@pytest.mark.django_db
def test_a_pool_that_stays_busy_times_out_naming_the_settings():
    checkout = _pool(_test_database(), min_size=1, max_size=1, timeout=0.6)
    try:
        held = checkout.getconn()
        with pytest.raises(PoolTimeout, match="FORGE_DB_POOL_MAX, FORGE_DB_POOL_TIMEOUT"):
            checkout.getconn()
        assert DATABASE.down  # noted whoever catches it: handler500 is told nothing
        checkout.putconn(held)
    finally:
        checkout.close()


def test_a_server_that_refuses_fails_a_checkout_long_before_the_pool_timeout(caplog):
    caplog.set_level(logging.INFO)
    nobody = f"host=127.0.0.1 port={free_port()} dbname=forge user=forge connect_timeout=2"
    checkout = _pool(nobody, min_size=0, max_size=2, timeout=30, reconnect_timeout=1)
    try:
        started = time.monotonic()
        with pytest.raises(psycopg.OperationalError):  # PoolTimeout, or the refusal
            checkout.getconn()
        waited = time.monotonic() - started
        again = time.monotonic()
        with pytest.raises(psycopg.OperationalError):  # the server's own refusal
            checkout.getconn()  # the outage is known: no waiting at all
        waited_again = time.monotonic() - again
    finally:
        checkout.close()

    # Each would have waited the pool's 30 s before an outage was a state of the process.
    assert waited < 10 and waited_again < 2
    assert DATABASE.down
    lines = [r.getMessage() for r in caplog.records if r.name == "forge.outages"]
    assert len(lines) == 1 and lines[0].startswith("the database is unavailable")


@pytest.mark.postgres
@pytest.mark.django_db
def test_a_server_back_after_an_outage_is_used_at_once_not_after_the_pools_backoff():
    checkout = _pool(_test_database(), min_size=0, max_size=2, timeout=10)
    try:
        DATABASE.failed("the server was restarted")  # as the pool's failed attempts note it

        started = time.monotonic()
        conn = checkout.getconn()
        waited = time.monotonic() - started

        assert conn.execute("SELECT 1").fetchone() == (1,)
        checkout.putconn(conn)
    finally:
        checkout.close()
    assert waited < 5  # the pool's next attempt of its own could be a second or more away


# --- A worker's pool and its budget -------------------------------------------------------


@pytest.mark.postgres
@pytest.mark.django_db
def test_a_workers_pool_holds_a_connection_per_slot_and_its_own(settings):
    options = settings.DATABASES["default"]["OPTIONS"]["pool"]
    before = (options["min_size"], options["max_size"])
    try:
        connection.ensure_connection()  # the test's own, held: not one of the slots'
        pool = connection.pool
        assert pool is not None
        stats = pool.get_stats()
        held = stats["pool_size"] - stats["pool_available"]

        fit_pool(5)

        assert held >= 1
        assert (pool.min_size, pool.max_size) == (2, 5 + OWN_CONNECTIONS + held)
    finally:
        options.update(min_size=before[0], max_size=before[1])
        if connection.pool is not None:
            connection.pool.resize(*before)


@pytest.mark.postgres
@pytest.mark.django_db
def test_the_server_reports_its_connections():
    with connection.cursor() as cursor:
        server = read_server(cursor)
        cursor.execute("SHOW max_connections")
        (max_connections,) = cursor.fetchone()

    assert server.max_connections == int(max_connections)
    assert server.reserved >= 0 and server.in_use >= 0
    assert server.free <= server.max_connections - server.reserved


def test_a_worker_fits_when_its_slots_and_own_connections_are_free():
    server = ServerConnections(max_connections=20, reserved=3, in_use=5)  # 12 free

    assert refusal(9, server) is None  # 9 + 3 = 12
    too_many = refusal(10, server)
    assert too_many is not None
    assert "FORGE_WORKER_CONCURRENCY=10" in too_many and "max_connections=20" in too_many
    assert "leaves 12" in too_many and "at most 9 slots" in too_many
    assert "\n" not in too_many


@pytest.mark.postgres
@pytest.mark.django_db
def test_a_worker_that_fits_is_not_refused_and_one_that_does_not_is():
    with connection.cursor() as cursor:
        free = read_server(cursor).free

    assert capacity.startup_refusal(1) is None
    refused = capacity.startup_refusal(free + 10)
    assert refused is not None and f"FORGE_WORKER_CONCURRENCY={free + 10}" in refused


@pytest.mark.postgres
@pytest.mark.django_db
def test_a_server_already_refusing_clients_refuses_the_worker_at_start(monkeypatch):
    def full(*args: Any, **kwargs: Any) -> Any:
        raise psycopg.OperationalError("connection failed: FATAL:  sorry, too many clients already")

    monkeypatch.setattr(capacity.psycopg, "connect", full)

    refused = capacity.startup_refusal(4)

    assert refused is not None
    assert "FORGE_WORKER_CONCURRENCY=4" in refused and "max_connections" in refused


class _SQLiteConnection:
    vendor = "sqlite"


def test_a_worker_on_sqlite_has_no_budget_to_check(monkeypatch):
    monkeypatch.setattr(capacity, "connection", _SQLiteConnection())

    assert capacity.startup_refusal(10_000) is None
