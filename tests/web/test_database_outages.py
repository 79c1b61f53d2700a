"""The database going away is a state (``accounts.outages``, ``forge_web.outages``): the web
answers 503 ``database_unavailable`` with ``Retry-After`` instead of 500, logs the outage
once when it starts and once when it ends, and the worker's threads ride it out."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterator
from concurrent.futures import Future
from typing import Any

import psycopg
import psycopg.errors
import pytest
from django.core.cache import cache
from django.db import IntegrityError, InterfaceError, OperationalError, connection
from django.db.backends.signals import connection_created
from django.test import Client
from psycopg_pool import PoolTimeout

from accounts.outages import (
    DATABASE,
    REDIS,
    DatabaseAway,
    Reconnects,
    database_unavailable,
    ride_out,
)
from runs import publish


def _wrapped(cause: BaseException, cls: type[Exception] = OperationalError) -> Exception:
    """``cause`` as Django raises it: its own class, the driver's error as the cause."""
    try:
        raise cls(str(cause)) from cause
    except Exception as error:
        return error


REFUSED = psycopg.OperationalError("connection failed: Connection refused")


def _locked() -> sqlite3.OperationalError:
    error = sqlite3.OperationalError("database is locked")
    error.sqlite_errorname = "SQLITE_BUSY"  # type: ignore[attr-defined]
    return error


@pytest.fixture(autouse=True)
def no_outage_before_or_after() -> Iterator[None]:
    DATABASE.recovered()
    yield
    DATABASE.recovered()


def _outage_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "forge.outages"]


@pytest.mark.parametrize(
    "error",
    [
        _wrapped(REFUSED),
        _wrapped(psycopg.errors.AdminShutdown("terminating connection")),
        _wrapped(psycopg.errors.CannotConnectNow("the database system is starting up")),
        _wrapped(psycopg.errors.TooManyConnections("sorry, too many clients already")),
        _wrapped(psycopg.InterfaceError("the connection is closed"), InterfaceError),
        InterfaceError("connection already closed"),
        _wrapped(_locked()),
        OperationalError("the pool gave up"),
        REFUSED,  # the driver's own, unwrapped (a connection pool's timeout is one)
        _wrapped(PoolTimeout("couldn't get a connection after 10.00 sec")),
        PoolTimeout("couldn't get a connection after 10.00 sec"),
        # As libpq reports a connection the server refused: no SQLSTATE, the message.
        _wrapped(psycopg.OperationalError("connection failed: FATAL: sorry, too many clients")),
    ],
    ids=lambda e: f"{type(e).__name__}:{e}"[:60],
)
def test_errors_of_a_database_that_is_away_mean_unavailable(error):
    assert database_unavailable(error)


@pytest.mark.parametrize(
    "error",
    [
        _wrapped(psycopg.errors.QueryCanceled("canceling statement due to statement timeout")),
        _wrapped(psycopg.errors.UndefinedColumn("column x does not exist")),
        _wrapped(sqlite3.OperationalError("no such column: x")),
        _wrapped(psycopg.errors.UniqueViolation("duplicate key"), IntegrityError),
        ValueError("not a database error"),
    ],
    ids=lambda e: f"{type(e).__name__}:{e}"[:60],
)
def test_errors_of_a_wrong_statement_do_not(error):
    assert not database_unavailable(error)


def _refuse_every_query(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
    raise _wrapped(REFUSED)


@pytest.mark.django_db
def test_the_api_answers_503_with_retry_after_and_logs_the_outage_once(api_client, author, caplog):
    client = api_client(author)
    caplog.set_level(logging.INFO)

    with connection.execute_wrapper(_refuse_every_query):
        answers = [client.get("/api/v1/runs") for _ in range(5)]

    assert [a.status_code for a in answers] == [503] * 5
    assert answers[0].json() == {
        "detail": "The database is unavailable for the moment; try again shortly.",
        "code": "database_unavailable",
    }
    assert all(1 <= int(a["Retry-After"]) <= 30 for a in answers)
    assert _outage_lines(caplog) == [
        "the database is unavailable (OperationalError: connection failed: Connection refused)"
    ]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]


@pytest.mark.django_db
def test_an_api_error_of_a_wrong_statement_is_still_a_500(api_client, author, caplog):
    client = api_client(author)

    def wrong(*args: Any) -> Any:
        raise _wrapped(psycopg.errors.UndefinedColumn("column x does not exist"))

    with connection.execute_wrapper(wrong):
        answer = client.get("/api/v1/runs")

    assert answer.status_code == 500
    assert answer.json()["code"] == "server_error"
    assert not DATABASE.down


@pytest.mark.django_db
def test_a_page_answers_a_503_page_with_retry_after_not_a_500(viewer, caplog):
    client = Client(raise_request_exception=False)
    client.force_login(viewer)
    caplog.set_level(logging.INFO)

    with connection.execute_wrapper(_refuse_every_query):
        answers = [client.get("/"), client.get("/runs/")]

    assert [a.status_code for a in answers] == [503, 503]
    assert "Forge is unavailable for a moment" in answers[0].text
    assert int(answers[0]["Retry-After"]) >= 1
    assert len(_outage_lines(caplog)) == 1
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]


@pytest.mark.django_db
def test_a_page_whose_error_is_no_outage_is_still_a_500(viewer):
    client = Client(raise_request_exception=False)
    client.force_login(viewer)

    def wrong(execute: Any, sql: str, *args: Any) -> Any:
        if "SELECT 1" in sql:
            return execute(sql, *args)
        raise _wrapped(sqlite3.OperationalError("no such column: x"))

    with connection.execute_wrapper(wrong):
        answer = client.get("/")

    assert answer.status_code == 500


def test_a_new_connection_ends_the_outage_and_logs_its_length(caplog):
    caplog.set_level(logging.INFO)
    DATABASE.failed(_wrapped(REFUSED))

    connection_created.send(sender=type(connection), connection=connection)
    connection_created.send(sender=type(connection), connection=connection)

    lines = _outage_lines(caplog)
    assert len(lines) == 2
    assert lines[1].startswith("the database is back after ")
    assert not DATABASE.down


def test_riding_out_calls_again_with_growing_capped_waits_until_the_database_answers():
    failures = [_wrapped(REFUSED)] * 6
    waits: list[float] = []

    def read() -> str:
        if failures:
            raise failures.pop()
        return "rows"

    assert ride_out(read, wait=waits.append) == "rows"
    assert len(waits) == 6
    assert waits[0] <= 0.05 and all(0 < w <= 2.0 for w in waits)
    assert max(waits) > waits[0]


def test_riding_out_raises_an_error_that_is_no_outage_at_once():
    waits: list[float] = []

    def wrong() -> None:
        raise _wrapped(psycopg.errors.UndefinedColumn("column x does not exist"))

    with pytest.raises(OperationalError):
        ride_out(wrong, wait=waits.append)
    assert waits == []


def test_reconnects_give_up_after_the_outage_limit(settings):
    settings.FORGE_DB_OUTAGE_SECONDS = 10
    now = [0.0]
    reconnects = Reconnects(clock=lambda: now[0])

    for _ in range(5):
        reconnects.failed(_wrapped(REFUSED))
        now[0] += 2.4
    now[0] += 0.5
    with pytest.raises(DatabaseAway, match="FORGE_DB_OUTAGE_SECONDS"):
        reconnects.failed(_wrapped(REFUSED))

    reconnects.succeeded()  # a later outage has its own 10 s
    assert reconnects.failed(_wrapped(REFUSED)) <= 0.05


@pytest.fixture
def no_redis_outage() -> Iterator[None]:
    REDIS.recovered()
    yield
    REDIS.recovered()


def test_wake_ups_that_fail_log_redis_away_once_and_back_once(no_redis_outage, caplog):
    caplog.set_level(logging.INFO)
    futures: list[Future[None]] = []
    for _ in range(50):
        failed: Future[None] = Future()
        failed.set_exception(ConnectionError("Error 111 connecting to 127.0.0.1:6390."))
        futures.append(failed)
    sent: Future[None] = Future()
    sent.set_result(None)

    for future in [*futures, sent, sent]:
        publish._log_failure(future)

    lines = _outage_lines(caplog)
    assert (
        lines[0]
        == "Redis is unavailable (ConnectionError: Error 111 connecting to 127.0.0.1:6390.)"
    )
    assert lines[1].startswith("Redis is back after ")
    assert len(lines) == 2
    assert not [r for r in caplog.records if r.exc_info]


@pytest.mark.django_db
def test_a_failing_cache_lets_requests_through_and_is_logged_once(
    no_redis_outage, api_client, author, monkeypatch, caplog
):
    client = api_client(author)
    caplog.set_level(logging.INFO)

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise ConnectionError("Error 111 connecting to 127.0.0.1:6390.")

    monkeypatch.setattr(cache, "get", refused)
    answers = [client.get("/api/v1/me") for _ in range(5)]

    assert [a.status_code for a in answers] == [200] * 5
    assert len([r for r in caplog.records if r.name == "forge.outages"]) == 1
    assert not [r for r in caplog.records if r.exc_info]


# Each request gets past the endpoint's own checks of its input to the database.
OAUTH_PROGRAM_REQUESTS = {
    "token": lambda client: client.post(
        "/oauth/token/", {"grant_type": "authorization_code", "code": "c", "client_id": "x"}
    ),
    "revocation": lambda client: client.post("/oauth/revoke/", {"token": "t", "client_id": "x"}),
    "registration": lambda client: client.post(
        "/oauth/register/",
        {"client_name": "Host", "redirect_uris": ["http://127.0.0.1:8123/callback"]},
        content_type="application/json",
    ),
    "registration management": lambda client: client.get(
        "/oauth/register/abc/", headers={"Authorization": "Bearer registration-token"}
    ),
}


@pytest.mark.django_db
@pytest.mark.parametrize("endpoint", OAUTH_PROGRAM_REQUESTS)
def test_the_oauth_endpoints_programs_call_answer_503_as_json(endpoint):
    # An MCP host's OAuth client reads JSON; the consent page, a person's, stays a page.
    client = Client(raise_request_exception=False)

    with connection.execute_wrapper(_refuse_every_query):
        answer = OAUTH_PROGRAM_REQUESTS[endpoint](client)

    assert answer.status_code == 503, answer.content[:200]
    assert answer.json()["code"] == "database_unavailable"
    assert int(answer["Retry-After"]) >= 1
