"""The worker path of one step (issue 13): few statements, one round trip for a step's
writes on PostgreSQL, and every guarantee kept when those writes are checked only as
they are sent: a result whose fencing token was taken over is dropped with everything
its transaction decided; a worker's slots take steps of different runs first.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.db import connection, connections
from django_tasks_db.compat import TaskResultStatus
from django_tasks_db.models import DBTaskResult

from runs import events as event_rows
from runs import worker
from runs.engine import locked_run
from runs.models import ExecutionRecord, Run, RunEvent, StepRun
from runs.services import start_run
from runs.slots import SlotWorker, spread
from runs.tasks import run_step

from .runs_helpers import approved_version

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def workspaces(settings, tmp_path):
    settings.FORGE_WORKSPACES = str(tmp_path / "workspaces")


def _chain(count: int) -> list[dict[str, Any]]:
    return [
        {
            "id": f"s{i}",
            "description": f"Pass step {i} along",
            "tool": "noop",
            "depends_on": [f"s{i - 1}"] if i else [],
        }
        for i in range(count)
    ]


def _fan_out(count: int) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = [
        {"id": f"w{i}", "description": f"Work item {i}", "tool": "noop"} for i in range(count)
    ]
    join = {"id": "total", "description": "Join the items", "tool": "noop"}
    return [*steps, {**join, "depends_on": [s["id"] for s in steps]}]


def _assert_gapless(run_id: int) -> None:
    seqs = list(
        RunEvent.objects.filter(run_id=run_id).order_by("seq").values_list("seq", flat=True)
    )
    assert seqs == list(range(1, len(seqs) + 1))
    assert Run.objects.get(pk=run_id).last_seq == len(seqs)


def _chain_statements(author: Any, approver: Any, operator: Any, steps: int) -> list[bool]:
    """For each statement a chain of ``steps`` sends (transaction control aside), whether
    it went in a batch of statements sent without waiting for each result."""
    version = approved_version(author, approver, _chain(steps))
    worker.run_step(start_run(version, operator).pk, "s0")  # its graph compiled
    run = start_run(version, operator)
    sent: list[bool] = []

    def record(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if not sql.lstrip().upper().startswith(("BEGIN", "SAVEPOINT", "RELEASE")):
            pgconn = getattr(connection.connection, "pgconn", None)  # psycopg's
            sent.append(pgconn is not None and pgconn.pipeline_status != 0)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        worker.run_step(run.pk, "s0")
    assert Run.objects.get(pk=run.pk).status == "succeeded"
    _assert_gapless(run.pk)
    return sent


def test_a_chained_step_costs_its_run_lock_and_a_batch_of_writes(author, approver, operator):
    short = _chain_statements(author, approver, operator, 5)
    long = _chain_statements(author, approver, operator, 25)

    # The run's lock, then the step's writes: its execution record, its result, the next
    # step's claim, the events, the run's projection.
    assert (len(long) - len(short)) / 20 == 6
    if connection.vendor == "postgresql":
        # ... those five in one round trip.
        assert (long.count(False) - short.count(False)) / 20 == 1


def test_a_result_whose_token_was_taken_over_is_dropped_with_all_it_decided(
    author, approver, operator, caplog
):
    version = approved_version(author, approver, _chain(2))
    run = start_run(version, operator)
    with locked_run(run.pk) as locked:
        claim = worker._claim(locked, "s0")
    assert claim is not None
    result = worker._execute(claim)
    # The reaper gave the step to another worker meanwhile: a new token on the row.
    StepRun.objects.filter(run=run, step_id="s0").update(fencing_token=claim.fencing_token + 1)
    events_before = RunEvent.objects.filter(run=run).count()

    assert worker.finish(claim, result) is None

    assert "dropping a stale result of s0" in caplog.text
    rows = {row.step_id: row for row in StepRun.objects.filter(run=run)}
    assert rows["s0"].status == "running"
    assert rows["s1"].status == "pending"  # the next step it would have claimed is not
    assert RunEvent.objects.filter(run=run).count() == events_before
    # The tool did run: its record stays.
    assert list(ExecutionRecord.objects.filter(run=run).values_list("step_id", flat=True)) == ["s0"]
    _assert_gapless(run.pk)


def test_a_claim_that_finds_the_step_running_changes_nothing(author, approver, operator):
    version = approved_version(author, approver, _chain(2))
    run = start_run(version, operator)
    # Another worker's claim the scheduler has not seen yet.
    StepRun.objects.filter(run=run, step_id="s0").update(status="running", fencing_token=7)
    events_before = RunEvent.objects.filter(run=run).count()

    with pytest.raises(RuntimeError, match="was not ready to claim"):
        with locked_run(run.pk) as locked:
            worker._claim(locked, "s0")

    assert RunEvent.objects.filter(run=run).count() == events_before
    assert StepRun.objects.get(run=run, step_id="s0").fencing_token == 7


def _task(run_id: int, step_id: str, priority: int = 0) -> DBTaskResult:
    return DBTaskResult(
        args_kwargs={"args": [run_id, step_id], "kwargs": {}},
        priority=priority,
        task_path=run_step.module_path,
    )


def test_a_claim_takes_a_step_of_each_run_before_a_second_of_any():
    queue = [_task(1, "a"), _task(1, "b"), _task(1, "c"), _task(2, "a"), _task(2, "b")]
    queue += [_task(3, "a")]

    taken = spread(queue, 4)

    assert [t.args_kwargs["args"] for t in taken] == [[1, "a"], [2, "a"], [3, "a"], [1, "b"]]


def test_a_higher_priority_still_goes_first():
    queue = [_task(1, "a", priority=5), _task(1, "b", priority=5), _task(2, "a")]

    taken = spread(queue, 2)

    assert [t.args_kwargs["args"] for t in taken] == [[1, "a"], [1, "b"]]


def test_a_worker_claims_queued_steps_of_distinct_runs(author, approver, operator):
    version = approved_version(author, approver, _fan_out(4))
    runs = [start_run(version, operator) for _ in range(3)]

    claimed = SlotWorker(concurrency=3, worker_id="test-spread")._claim(3)

    assert sorted(t.args_kwargs["args"][0] for t in claimed) == sorted(r.pk for r in runs)
    assert all(t.status == TaskResultStatus.RUNNING for t in claimed)


def test_events_read_back_for_a_catch_up_are_those_the_orm_reads(author, approver, operator):
    version = approved_version(author, approver, _chain(3))
    run = start_run(version, operator)
    worker.run_step(run.pk, "s0")
    stored = RunEvent.objects.filter(run=run).order_by("seq")

    assert event_rows.after(run.pk, 0) == [event_rows.from_row(row) for row in stored]
    assert event_rows.after(run.pk, 4) == [event_rows.from_row(row) for row in stored[4:]]


def test_one_heartbeat_extends_every_held_lease_and_lets_go_of_a_lost_one(
    author, approver, operator, caplog, settings
):
    settings.FORGE_STEP_LEASE_SECONDS = 3600  # the heartbeat thread itself stays asleep
    version = approved_version(author, approver, _fan_out(3))
    run = start_run(version, operator)
    with locked_run(run.pk) as locked:
        claims = [worker._claim(locked, step) for step in ("w0", "w1")]
    held = [c for c in claims if c is not None]
    StepRun.objects.filter(run=run).update(lease_expires_at=None)
    # The reaper gave w1 to another worker meanwhile.
    StepRun.objects.filter(run=run, step_id="w1").update(fencing_token=held[1].fencing_token + 1)
    for claim in held:
        worker.HEARTBEATS.hold(claim)

    worker.HEARTBEATS._extend(held)

    rows = {row.step_id: row for row in StepRun.objects.filter(run=run)}
    assert rows["w0"].lease_expires_at is not None
    assert rows["w1"].lease_expires_at is None
    assert "lost the lease of w1" in caplog.text
    assert worker._key(held[1]) not in worker.HEARTBEATS._held
    worker.HEARTBEATS.release(held[0])


def test_the_heartbeat_thread_holds_a_connection_only_while_it_beats_and_ends_when_idle(
    author, approver, operator, settings, monkeypatch
):
    settings.FORGE_STEP_LEASE_SECONDS = 0.3  # a beat every 0.1 s
    version = approved_version(author, approver, _fan_out(1))
    run = start_run(version, operator)
    with locked_run(run.pk) as locked:
        claim = worker._claim(locked, "w0")
    assert claim is not None
    heartbeats = worker._Heartbeats()
    beating: list[Any] = []  # the heartbeat thread's database connection, at each beat
    extend = heartbeats._extend

    def spied(held: list[Any]) -> None:
        extend(held)
        beating.append(connections["default"])

    monkeypatch.setattr(heartbeats, "_extend", spied)
    heartbeats.hold(claim)
    thread = heartbeats._thread
    assert thread is not None
    deadline = time.monotonic() + 10
    while len(beating) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    heartbeats.release(claim)
    thread.join(timeout=5)

    assert len(beating) >= 3
    assert not thread.is_alive() and heartbeats._thread is None  # woke to nothing held
    assert all(wrapper.connection is None for wrapper in beating)  # closed after each


@pytest.mark.postgres
def test_a_steps_statements_send_their_values_apart_from_the_sql(author, approver, operator):
    """On PostgreSQL the worker's own statements (the run's lock, the batch of writes)
    bind their values on the server, where the ORM's cursor quotes them into the text."""
    import psycopg  # a PostgreSQL pass has it

    version = approved_version(author, approver, _chain(3))
    run = start_run(version, operator)
    cursors: dict[str, type] = {}

    def record(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        cursors[sql] = type(context["cursor"].cursor)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        worker.run_step(run.pk, "s0")
    assert Run.objects.get(pk=run.pk).status == "succeeded"

    def binds_on_server(sql_start: str) -> set[bool]:
        return {
            not issubclass(kind, psycopg.ClientCursor)
            for sql, kind in cursors.items()
            if sql.startswith(sql_start)
        }

    assert binds_on_server('SELECT "id"') == {True}  # the run's lock (runs.sql.Locked)
    assert binds_on_server('UPDATE "runs_steprun"') == {True}  # claims and results
    assert binds_on_server('INSERT INTO "runs_runevent"') == {True}
    assert binds_on_server('SELECT "runs_steprun"."status"') == {False}  # the ORM's own
