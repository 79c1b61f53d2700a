"""A worker rides out a database outage (``accounts.outages``): the claim loop claims again,
a step's claim and result wait for the database, no step runs twice, the run's events
stay gapless, the outage is logged once when it starts and once when it ends, and one
longer than ``FORGE_DB_OUTAGE_SECONDS`` stops the worker with ``DatabaseAway``.

tests/integration/test_outages.py restarts a real PostgreSQL under a real worker."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from django.db import OperationalError

from accounts.outages import DATABASE, DatabaseAway
from runs import worker
from runs.models import ExecutionRecord, Run, RunEvent
from runs.services import start_run
from runs.slots import SlotWorker

from .runs_helpers import approved_version, drain_slots

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def workspaces(settings, tmp_path):
    settings.FORGE_WORKSPACES = str(tmp_path / "workspaces")


@pytest.fixture(autouse=True)
def no_outage_before_or_after() -> Iterator[None]:
    DATABASE.recovered()
    yield
    DATABASE.recovered()


def _refused() -> OperationalError:
    try:
        raise OperationalError("server closed the connection unexpectedly") from (
            psycopg.OperationalError("server closed the connection unexpectedly")
        )
    except OperationalError as error:
        return error


def _chain(count: int) -> list[dict[str, Any]]:
    return [
        {
            "id": f"s{i}",
            "description": f"Pass step {i} along",
            "tool": "echo",
            "args": {"n": i},
            "depends_on": [f"s{i - 1}"] if i else [],
        }
        for i in range(count)
    ]


def _assert_ran_each_step_once_and_gapless(run: Run, steps: int) -> None:
    run.refresh_from_db()
    assert run.status == "succeeded"
    executed = list(ExecutionRecord.objects.filter(run=run).values_list("step_id", flat=True))
    assert sorted(executed) == sorted(f"s{i}" for i in range(steps))
    seqs = list(RunEvent.objects.filter(run=run).order_by("seq").values_list("seq", flat=True))
    assert seqs == list(range(1, len(seqs) + 1)) and run.last_seq == len(seqs)


def _outage_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "forge.outages"]


def test_the_claim_loop_claims_again_once_the_database_is_back(
    author, approver, operator, monkeypatch, caplog
):
    caplog.set_level(logging.INFO)
    run = start_run(approved_version(author, approver, _chain(3)), operator)
    claim = SlotWorker._claim
    failures = [_refused()] * 6

    def claim_or_fail(self: SlotWorker, limit: int) -> Any:
        if failures:
            raise failures.pop()
        DATABASE.recovered()  # what a new connection says (connection_created)
        return claim(self, limit)

    monkeypatch.setattr(SlotWorker, "_claim", claim_or_fail)

    drain_slots(1)

    _assert_ran_each_step_once_and_gapless(run, 3)
    lines = _outage_lines(caplog)
    assert lines[0].startswith("the database is unavailable")
    assert lines[-1].startswith("the database is back after")
    # Six failures, one outage; the slot's own first connection, made meanwhile, may end
    # it early once (connection_created), never once per failure.
    assert len(lines) in (2, 4)
    assert not [r for r in caplog.records if r.exc_info]


def test_a_result_that_meets_the_database_away_is_recorded_once_it_is_back(
    author, approver, operator, monkeypatch
):
    run = start_run(approved_version(author, approver, _chain(3)), operator)
    decide = worker.decide
    calls = [0]

    def decide_or_fail(run_id: int, make: Any) -> Any:
        calls[0] += 1
        # The first claim, and then the first result, each meet the database away twice.
        if calls[0] in (1, 2, 4, 5):
            raise _refused()
        return decide(run_id, make)

    monkeypatch.setattr(worker, "decide", decide_or_fail)

    worker.run_step(run.pk, "s0")

    _assert_ran_each_step_once_and_gapless(run, 3)
    # s0's claim and its result (each after two failures), then s1's and s2's results.
    assert calls[0] == 8


def test_the_reaper_waits_a_lease_after_an_outage_before_taking_leases_over(settings):
    settings.FORGE_STEP_LEASE_SECONDS = 1
    DATABASE.failed(_refused())
    assert not worker.may_reap()

    DATABASE.recovered()
    assert not worker.may_reap()  # heartbeats first: the workers holding them are alive
    time.sleep(1.05)
    assert worker.may_reap()


def test_a_worker_stops_once_the_database_stays_away_past_the_limit(monkeypatch, settings):
    settings.FORGE_DB_OUTAGE_SECONDS = 1

    def refused(self: SlotWorker, limit: int) -> Any:
        raise _refused()

    monkeypatch.setattr(SlotWorker, "_claim", refused)
    slots = SlotWorker(concurrency=1, worker_id="test-slots", interval=0.01)
    started = time.monotonic()

    with pytest.raises(DatabaseAway, match="FORGE_DB_OUTAGE_SECONDS"):
        slots.run()
    assert time.monotonic() - started < 5
