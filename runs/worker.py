"""The worker's side of a run: claim a step, run it with a heartbeat, record the result,
and go straight on to a step it made ready.

A claim is two guards deep. The Scheduler admits the step under the run's lock (so the
budget and the concurrency limit hold across workers), and the ``StepRun`` row moves
from ``ready`` to ``running`` by compare-and-swap, taking a new fencing token. Only the
holder of the current token may record a result: a worker whose lease expired and was
taken over finds its token stale and its result is dropped, never committed.

The database going away does not lose a step: a slot waits for it (``ride_out``) before
its claim and, with the step's result in hand, before recording it, while the heartbeat
keeps trying to extend the step's lease; the reaper leaves leases alone for a lease's
length after an outage ends (``may_reap``), so that a step whose lease ran out only
because no heartbeat could be written is recorded by its own worker, once, and not
retried or handed to a person.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from accounts.outages import DATABASE, note_database_failure, ride_out
from forge.backoff import Backoff
from forge.compiler import ExecutableNode, ToolBinding
from forge.redaction import redact_text
from forge.runtime import ApprovalToken, Scheduler, ToolResult
from forge.runtime.agent_port import AgentGrant, agent_grant
from forge.runtime.dispatch import StepDispatcher, step_context
from forge.telemetry.switch import StepTrace
from plans.compilation import tools
from runs.decisions import decide
from runs.engine import STEP_FIELDS, LockedRun, locked_run, step_fields
from runs.execution import (
    agent_runner,
    executor,
    record_writes,
    take_pending_records,
    workspace_for,
)
from runs.executors import agents_step_of
from runs.models import StepRun
from runs.queue import settle_queued
from runs.sql import Batch, Statement, Update
from runs.timings import TIMINGS
from runs.tracing import step_trace

logger = logging.getLogger(__name__)

WORKER_ID = f"{socket.gethostname()}:{os.getpid()}"


@dataclass(frozen=True)
class Claim:
    """A step this worker holds: what to run, and the fencing token that proves it."""

    run_id: int
    step_id: str
    plan_version: int
    fencing_token: int
    attempt: int
    node: ExecutableNode
    call: ToolBinding | None  # the step's call, its values from earlier steps resolved
    approval_scopes: tuple[str, ...]
    token: ApprovalToken | None
    inputs: Mapping[str, Any]  # the dependencies' outputs, for an agent step
    grant: AgentGrant | None  # an agent step's allowance, from the budget at its start
    # Taken straight from the run's ready steps while its task waits in the queue: the
    # task is marked done when this claim's result is recorded (``tasks.settle_queued``).
    queued_task: bool = False
    trace: StepTrace | None = None  # where the step's span goes, when this process traces


def lease_seconds() -> float:
    return float(settings.FORGE_STEP_LEASE_SECONDS)


def run_step(run_id: int, step_id: str) -> None:
    """Run ``step_id`` of ``run_id`` if it is still ready, then whatever this worker's
    results make ready next (one step at a time in this slot; the rest go to the queue,
    where this worker's other slots and other workers take them)."""
    # MCP servers are listed again (when due) here, before the run's lock is taken:
    # inside it the engine and the executor use the tools as they are.
    tools()
    if not ride_out(lambda: _may_start(run_id, step_id)):
        return
    # A claim whose transaction failed took nothing: it may be made again.
    claim = ride_out(lambda: decide(run_id, lambda locked: _claim(locked, step_id)))
    while claim is not None:
        claim = finish(claim, _execute_or_crash(claim))


def execute_claim(claim: Claim) -> ToolResult:
    """Run a claimed step through the deployment's executor, its lease kept meanwhile; a
    crash is a failed result (``step_crashed``). The gateway runs an agent's claimed step
    with it, as a worker's slot does."""
    return _execute_or_crash(claim)


def _execute_or_crash(claim: Claim) -> ToolResult:
    """Run the claimed step; a crash outside the runner's result handling (a model that
    cannot be built, a runner that raises) fails the step at once with the error, instead
    of leaving it running until its lease expires and the reaper starts it again."""
    try:
        return _execute(claim)
    except Exception as exc:
        logger.exception("step %s of run %s crashed", claim.step_id, claim.run_id)
        return ToolResult(
            "failed",
            error=redact_text(
                f"the step's task crashed before it had a result: {type(exc).__name__}: {exc}"
            ),
            error_code="step_crashed",
        )


def _may_start(run_id: int, step_id: str) -> bool:
    """Whether the step's committed row still shows it waiting to start. A slot that
    finished a step goes straight on to the run's next ready step, whose task is still
    queued: that task then finds its step running or done and ends here, without taking
    the run's lock. A row that reads otherwise is decided under the lock, as always."""
    status = (
        StepRun.objects.filter(run_id=run_id, step_id=step_id)
        .order_by("-plan_version")
        .values_list("status", flat=True)
        .first()
    )
    return status in (None, "pending", "ready")


# A claim: the step's row from anything but running to running, with a new token.
_take = Update(
    StepRun,
    (
        *STEP_FIELDS,
        "lease_owner",
        "started_at",
        "heartbeat_at",
        "lease_expires_at",
        "fencing_token",
    ),
    where=("run", "plan_version", "step_id"),
    where_not=("status",),
)
# A result: only while the step runs under the claim's token.
_record = Update(
    StepRun,
    (*STEP_FIELDS, "lease_owner", "lease_expires_at", "finished_at", "latency_ms"),
    where=("run", "plan_version", "step_id", "status", "fencing_token"),
)


def _claim(locked: LockedRun, step_id: str, *, queued_task: bool = False) -> Claim | None:
    scheduler = locked.scheduler
    if agents_step_of(locked.run, scheduler.graph, step_id):
        return None  # the agent's, through the gateway (claim_for_agent)
    return _take_claim(locked, step_id, queued_task=queued_task)


def claim_for_agent(locked: LockedRun, step_id: str) -> Claim | None:
    """Claim a step of an agent's run for the agent's call through the gateway, as a
    worker claims its steps: admitted by the Scheduler (the approval gate, the budget),
    then the row's compare-and-swap with a fresh fencing token. ``None`` when the
    Scheduler does not admit it (a gate refusal fails the run, as for a worker)."""
    return _take_claim(locked, step_id, queued_task=False)


def _take_claim(locked: LockedRun, step_id: str, *, queued_task: bool) -> Claim | None:
    scheduler = locked.scheduler
    if not scheduler.admit(step_id):
        return None
    now = timezone.now()
    version = scheduler.state.plan_version
    # A fresh random token per claim: only the holder knows it, so only the holder can
    # record a result (equality is all the check needs; nobody orders tokens).
    fencing_token = secrets.randbits(62) + 1
    # The row's projected status may lag behind this transaction's unwritten events (a
    # step made ready a moment ago still reads "pending"), so the swap is from "not
    # running": the run's lock orders claims, and this guard makes a double claim fail
    # loudly instead of running a step twice.
    run_pk = locked.run.pk

    def taken(rows: int) -> None:
        if rows != 1:
            raise RuntimeError(f"step {step_id!r} of run {run_pk} was not ready to claim")

    take = _take.statement(
        {
            **step_fields(scheduler.state.steps[step_id]),
            "lease_owner": WORKER_ID,
            "started_at": now,
            "heartbeat_at": now,
            "lease_expires_at": now + timedelta(seconds=lease_seconds()),
            "fencing_token": fencing_token,
        },
        run_pk,
        version,
        step_id,
        "running",
    )
    locked.writes.add(take.checked(taken))
    locked.projected[step_id] = scheduler.state.steps[step_id]
    token = None
    step = scheduler.state.steps[step_id]
    if step.approved_hash:
        # The approval as the events recorded it; the signature, which is no business of
        # the events, from the step's row.
        signature = (
            StepRun.objects.filter(run=locked.run, plan_version=version, step_id=step_id)
            .values_list("approval_signature", flat=True)
            .get()
        )
        token = ApprovalToken(
            str(locked.run.pk),
            step_id,
            step.approved_hash,
            step.approved_by,
            signature,
            step.approved_preview,
        )
    node = scheduler.graph.nodes[step_id]
    steps = scheduler.state.steps
    return Claim(
        run_id=locked.run.pk,
        step_id=step_id,
        plan_version=version,
        fencing_token=fencing_token,
        attempt=scheduler.state.steps[step_id].attempt,
        node=node,
        call=scheduler.call(step_id),
        approval_scopes=scheduler.graph.document.requires_approval_before,
        token=token,
        inputs={dep: steps[dep].output for dep in node.depends_on},
        grant=None
        if node.binding is not None
        else agent_grant(scheduler.graph, scheduler.state, step_id, token),
        queued_task=queued_task,
        trace=step_trace(locked.run, version, step.approved_by),
    )


def _execute(claim: Claim) -> ToolResult:
    node = claim.node
    context = step_context(str(claim.run_id), node, workspace_for(claim.run_id), claim.attempt)
    agent = agent_runner() if node.binding is None else None
    dispatcher = StepDispatcher(executor(), agent, "set FORGE_MODEL")
    HEARTBEATS.hold(claim)
    try:
        with TIMINGS.timed("execute"):
            return dispatcher.dispatch(
                node,
                context,
                call=claim.call,
                token=claim.token,
                approval_scopes=claim.approval_scopes,
                inputs=claim.inputs,
                grant=claim.grant,
                trace=claim.trace,
            )
    finally:
        HEARTBEATS.release(claim)


class _StaleClaim(Exception):
    """The step was taken over while this worker ran it: its result must not count."""


def finish(claim: Claim, result: ToolResult, *, take_next: bool = True) -> Claim | None:
    """Record ``result`` if this worker still holds the step; claim the first step it made
    ready and queue the others (or, when it made none ready, claim the run's next ready
    step). A stale result is dropped; its execution record is kept, since the tool did
    run. Without ``take_next`` (the gateway, which runs no worker step) every step it
    made ready is queued and nothing is claimed."""
    kept = record_writes(take_pending_records())
    if claim.queued_task:
        kept.append(
            settle_queued(claim.run_id, claim.plan_version, claim.step_id, claim.attempt, WORKER_ID)
        )

    def record() -> Claim | None:
        return decide(
            claim.run_id, lambda locked: _record_result(locked, claim, result, kept, take_next)
        )

    def held_meanwhile(seconds: float) -> None:
        HEARTBEATS.hold(claim)
        time.sleep(seconds)

    # The step ran: its result waits out a database outage, its lease kept meanwhile
    # (a failed transaction wrote nothing, and the token's check refuses a second write).
    try:
        return ride_out(record, wait=held_meanwhile)
    except _StaleClaim:
        logger.warning("dropping a stale result of %s in run %s", claim.step_id, claim.run_id)
        ride_out(lambda: _send_alone(kept))
        return None
    finally:
        HEARTBEATS.release(claim)


def _send_alone(writes: list[Statement]) -> None:
    with transaction.atomic():
        Batch(writes).send()


def _record_result(
    locked: LockedRun,
    claim: Claim,
    result: ToolResult,
    kept: list[Statement],
    take_next: bool = True,
) -> Claim | None:
    # With the result, in the one round trip of the transaction's writes.
    locked.writes.add(*kept)
    scheduler = locked.scheduler
    step = scheduler.state.steps.get(claim.step_id)
    if (
        step is None
        or step.status != "running"
        or (scheduler.state.plan_version != claim.plan_version)
    ):
        raise _StaleClaim
    mark = len(scheduler.events)
    scheduler.done(claim.step_id, result)
    done = scheduler.state.steps[claim.step_id]
    # One conditional write: the result's projection, only while the token holds (checked
    # when the writes are sent, which rolls everything back if it did not).
    record = _record.statement(
        {
            **step_fields(done),
            "lease_owner": "",
            "lease_expires_at": None,
            "finished_at": timezone.now(),
            "latency_ms": result.latency_ms,
        },
        claim.run_id,
        claim.plan_version,
        claim.step_id,
        "running",
        claim.fencing_token,
    )
    locked.writes.add(record.checked(_held))
    locked.projected[claim.step_id] = done
    ready = [e.step_id for e in scheduler.events[mark:] if e.step_status == "ready" and e.step_id]
    # This slot is free now: it takes the first step its result made ready, else the
    # run's next ready step, in this same transaction; one lock per step instead of two.
    # That step's task waits in the queue (and then finds it taken), unless another
    # decision of this transaction made it ready: it is then not queued at all.
    if not take_next:
        next_claim = None
    elif ready:
        next_claim = _claim(locked, ready[0])
    elif (queued := scheduler.next_ready(skip=_in_backoff(scheduler))) is not None:
        unqueued = queued in locked.to_enqueue
        if unqueued:
            locked.to_enqueue.remove(queued)
        next_claim = _claim(locked, queued, queued_task=not unqueued)
    else:
        next_claim = None
    locked.to_enqueue.extend(ready[1:] if next_claim is not None else ready)
    return next_claim


def _held(rows: int) -> None:
    if not rows:
        raise _StaleClaim


def _in_backoff(scheduler: Scheduler) -> Callable[[str], bool]:
    """Steps a slot leaves to their queued task: those retried after a lost lease, which
    wait out a backoff (``lease_retry_delay``) before their task may run."""
    steps = scheduler.state.steps
    return lambda step_id: steps[step_id].interruptions > 0


class _Heartbeats:
    """One thread per worker process that extends the leases of the steps it holds.

    A thread per step cost more than a noop step itself (starting and joining it), and
    one thread beating for every held claim does the same job. It ends when it wakes to
    nothing held (the next claim held starts another), and it holds a database
    connection only while it beats: with the pool, a connection kept by an idle thread
    for the worker's life is one fewer for the slots.
    """

    def __init__(self) -> None:
        self._held: dict[tuple[int, str, int], Claim] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def hold(self, claim: Claim) -> None:
        with self._lock:
            self._held[_key(claim)] = claim
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._beat, daemon=True, name="forge-heartbeat"
                )
                self._thread.start()

    def release(self, claim: Claim) -> None:
        with self._lock:
            self._held.pop(_key(claim), None)

    def _beat(self) -> None:
        while True:
            time.sleep(lease_seconds() / 3)
            with self._lock:
                held = list(self._held.values())
                if not held:
                    self._thread = None  # decided under the lock hold() takes
                    return
            try:
                self._extend(held)
            except Exception as error:
                # The database is away: beat again at the next period, when it may be
                # back (the reaper waits a lease's length after an outage).
                if not note_database_failure(error):
                    raise
            finally:
                connection.close()

    def _extend(self, held: list[Claim]) -> None:
        """One transaction (one round trip on PostgreSQL) for every held claim, where
        each had its own: the leases of a worker's 32 slots beat together."""
        now = timezone.now()
        values = {"heartbeat_at": now, "lease_expires_at": now + timedelta(seconds=lease_seconds())}
        lost: list[Claim] = []
        beats = Batch()
        for claim in held:
            beat = _extend_lease.statement(
                values,
                claim.run_id,
                claim.plan_version,
                claim.step_id,
                claim.fencing_token,
                "running",
            )
            beats.add(beat.checked(lambda rows, claim=claim: None if rows else lost.append(claim)))
        with transaction.atomic():  # on SQLite: queued on the process's writer lock
            beats.send()
        for claim in lost:
            logger.warning("lost the lease of %s in run %s", claim.step_id, claim.run_id)
            self.release(claim)


# A heartbeat: only while the step runs under the claim's token.
_extend_lease = Update(
    StepRun,
    ("heartbeat_at", "lease_expires_at"),
    where=("run", "plan_version", "step_id", "fencing_token", "status"),
)


def _key(claim: Claim) -> tuple[int, str, int]:
    return (claim.run_id, claim.step_id, claim.fencing_token)


HEARTBEATS = _Heartbeats()


def lease_retry_delay(retry: int) -> float:
    """Seconds before the ``retry``-th start (from 1) of a step after a lost lease:
    ``FORGE_STEP_LEASE_RETRY_BACKOFF_SECONDS`` doubled per retry, at most
    ``FORGE_STEP_LEASE_RETRY_BACKOFF_MAX_SECONDS``, with jitter: the steps of a worker
    that died together are not all queued for the same instant."""
    wait = Backoff(
        first_s=settings.FORGE_STEP_LEASE_RETRY_BACKOFF_SECONDS,
        cap_s=settings.FORGE_STEP_LEASE_RETRY_BACKOFF_MAX_SECONDS,
    )
    return wait.delay(max(1, retry))


def may_reap() -> bool:
    """Whether the reaper may take over expired leases now: not while the database is
    away, nor for a lease's length after it came back, since no heartbeat could extend
    a lease meanwhile and the workers holding them are most likely alive."""
    return DATABASE.seconds_up() >= lease_seconds()


def reap_expired_leases() -> int:
    """Hand every running step whose lease expired back to the Scheduler: retried when
    it is safe to repeat (at most ``FORGE_STEP_MAX_LEASE_RETRIES`` times, each queued
    after an exponential backoff; then the step fails), otherwise left for a person to
    reconcile. Returns how many."""
    expired = StepRun.objects.filter(status="running", lease_expires_at__lt=timezone.now())
    reaped = 0
    for row in expired.values("run_id", "plan_version", "step_id", "fencing_token"):
        with locked_run(row["run_id"]) as locked:
            taken = StepRun.objects.filter(
                run_id=row["run_id"],
                plan_version=row["plan_version"],
                step_id=row["step_id"],
                status="running",
                fencing_token=row["fencing_token"],
                lease_expires_at__lt=timezone.now(),
            ).update(fencing_token=secrets.randbits(62) + 1, lease_owner="", lease_expires_at=None)
            step = locked.scheduler.state.steps.get(row["step_id"])
            if not taken or step is None or step.status != "running":
                continue
            locked.scheduler.interrupt(row["step_id"], reason="the worker's lease expired")
            retried = locked.scheduler.state.steps[row["step_id"]]
            for step_id in locked.became_ready():
                if step_id == row["step_id"]:
                    delay = lease_retry_delay(retried.interruptions)
                    locked.to_enqueue_later.append((step_id, delay))
                else:
                    locked.to_enqueue.append(step_id)
            reaped += 1
    return reaped
