"""Stored runs driven by the core Scheduler, one transaction per decision.

``locked_run`` locks a run's row (PostgreSQL ``SELECT ... FOR UPDATE``; on SQLite the
IMMEDIATE transaction already serialises writers), hands out a Scheduler caught up with
the stored events, and on leaving writes the events the Scheduler added together with
the ``Run`` and ``StepRun`` projections, in the same transaction. Each process keeps its
schedulers between transactions and only folds in the events other processes wrote
since (``seq`` tells which), so a decision costs the same at step 1,000 as at step 1.
A transaction that fails drops the cached scheduler, which is then rebuilt from the
database: the database is the truth, the cache only saves work. The cache is bounded
(``SCHEDULER_CACHE_SIZE`` runs, least recently used first) and lets go of a run once it
has ended, so a long-lived process holds the runs it works on, not every run it saw.

A worker's slots (``runs.slots``) are threads of one process: they share these caches,
each under its own lock, and take a run's lock through their own database connection,
so two slots deciding for one run wait for each other as two processes do.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from forge.compiler import ExecutableGraph
from forge.runtime import RunEvent as CoreEvent
from forge.runtime import Scheduler, StepState, rebuild
from forge.runtime.events import EventType
from forge.runtime.previews import Previewer, step_previewer
from forge.runtime.reservations import StepAllowance
from forge.runtime.status import FINAL_RUN_STATUSES
from plans.compilation import compile_version, tools
from plans.errors import VersionHasErrors
from plans.gate import gate
from plans.models import PlanVersion
from runs import events as event_rows
from runs import publish, signals
from runs.execution import executor, workspace_for
from runs.executors import agents_step_of, workers_steps
from runs.models import Run, StepRun
from runs.queue import enqueue_for
from runs.sql import Batch, Locked, Statement, Update
from runs.timings import TIMINGS

SCHEDULER_CACHE_SIZE = 256
_GRAPH_CACHE_SIZE = 64


class _Cache[V]:
    """A bounded map from id to value, least recently used evicted first, safe to share
    between a process's threads."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[int, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: int) -> V | None:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: int, value: V) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def pop(self, key: int, value: V | None = None) -> None:
        """Forget ``key`` (only while it still maps to ``value``, when given)."""
        with self._lock:
            if value is None or self._items.get(key) is value:
                self._items.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        return len(self._items)


_SCHEDULERS: _Cache[Scheduler] = _Cache(SCHEDULER_CACHE_SIZE)
_GRAPHS: _Cache[ExecutableGraph] = _Cache(_GRAPH_CACHE_SIZE)
_compiling = threading.Lock()  # one compile of a version at a time, not one per slot
_graphs_tools: list[object] = [None]  # the tools snapshot the cached graphs were compiled with


def graph_for(version: PlanVersion) -> ExecutableGraph:
    """The compiled graph of a stored version, compiled once per process and tools
    snapshot with the deployment's compiler (the one plans used), so what was approved is
    what runs. Compiled with the tools as they are: this runs inside transactions, where
    nothing may wait on an MCP server (the worker discovers before it takes a lock)."""
    return _graph(version.pk, lambda: version)


def remember_graph(
    version: PlanVersion, compile_: Callable[[], ExecutableGraph]
) -> ExecutableGraph:
    """``compile_()`` (which compiles ``version`` with the tools as they are), kept as
    the version's graph when the tools did not change meanwhile: starting a run compiles
    to check that the version runs, and its scheduler then need not compile it again
    (for a 5,000-step plan that was half the request and a second graph in memory)."""
    before = tools(refresh=True)
    graph = compile_()
    if tools(refresh=False) is before:
        _same_tools(before)
        _GRAPHS.put(version.pk, graph)
    return graph


def _same_tools(snapshot: object) -> None:
    # A tool changed: graphs compiled before would be refused at run time (stale_binding).
    if snapshot is not _graphs_tools[0]:
        _GRAPHS.clear()
        _graphs_tools[0] = snapshot


def _graph(version_id: int, load: Callable[[], PlanVersion]) -> ExecutableGraph:
    _same_tools(tools(refresh=False))
    # Keyed by id, so a worker's transaction never reads the version's (large) document
    # once its graph is cached.
    graph = _GRAPHS.get(version_id)
    if graph is not None:
        return graph
    with _compiling:
        # Slots that asked together share one compile (and one graph object, which the
        # schedulers' indexes are keyed on).
        graph = _GRAPHS.get(version_id)
        if graph is None:
            version = load()
            result = compile_version(version, refresh=False)
            if result.graph is None:
                raise VersionHasErrors(
                    f"version {version.number} does not compile with this deployment's tools",
                    diagnostics=[d.to_data() for d in result.errors],
                )
            graph = result.graph
            _GRAPHS.put(version_id, graph)
    return graph


def _graph_of(run: Run) -> ExecutableGraph:
    return _graph(run.version_id, lambda: PlanVersion.objects.get(pk=run.version_id))


@dataclass
class LockedRun:
    run: Run
    scheduler: Scheduler
    flushed: int = 0  # how many of the scheduler's events are written already
    to_enqueue: list[str] = field(default_factory=list)
    # Steps to queue only after a delay (seconds): retries after a lost lease back off.
    to_enqueue_later: list[tuple[str, float]] = field(default_factory=list)
    # Steps whose row a worker already wrote in this transaction (with its claim or its
    # result), with the state written: the flush need not write them again.
    projected: dict[str, StepState] = field(default_factory=dict)
    # This transaction's writes that nothing in it reads (events, projections, claims,
    # results, execution records), sent in one go before it commits (``runs.sql``).
    writes: Batch = field(default_factory=Batch)

    def became_ready(self) -> list[str]:
        """Steps made ready by this transaction's events, in the order they became so."""
        return [e.step_id for e in self.scheduler.events if e.step_status == "ready" and e.step_id]

    def flush(self) -> None:
        """Add the writes of the events decided so far and of the steps' projections."""
        events = self.scheduler.events[self.flushed :]
        if events:
            _persist(self.run, self.scheduler, events, self.projected, self.writes)
            self.flushed = len(self.scheduler.events)


@contextmanager
def locked_run(run_id: int) -> Iterator[LockedRun]:
    """The run's lock, its scheduler caught up, for one transaction. What the caller
    adds to ``writes`` goes with the events and projections, in one round trip on
    PostgreSQL: the lock is then held for the decision and two round trips (the writes
    and the commit), whatever the decision wrote."""
    scheduler: Scheduler | None = None
    timed = TIMINGS.timed
    try:
        with timed("run_txn"), transaction.atomic():
            with timed("lock_wait"):
                run = _lock_run(run_id)
            with timed("catch_up"):
                scheduler = _caught_up(run)
            locked = LockedRun(run, scheduler)
            with timed("decide"):
                yield locked
            with timed("write"):
                locked.flush()
                if locked.flushed:
                    locked.writes.add(_project_run(run, locked.scheduler))
                # An agent's steps wait for its call through the gateway, not a worker.
                graph = locked.scheduler.graph
                enqueue_for(
                    run.pk,
                    locked.scheduler,
                    workers_steps(run, graph, locked.to_enqueue),
                    [
                        (step_id, delay)
                        for step_id, delay in locked.to_enqueue_later
                        if not agents_step_of(run, graph, step_id)
                    ],
                )
                locked.writes.send()
            if locked.flushed:
                last_seq = run.last_seq
                transaction.on_commit(lambda: publish.run_changed(run.pk, last_seq))
                _tell_attention(run.pk, locked.scheduler.events)
    except BaseException:
        # Only this transaction's scheduler: another slot may have rebuilt the run's
        # since this one's rollback released the lock.
        _SCHEDULERS.pop(run_id, scheduler)
        raise
    if _ended(scheduler):
        _SCHEDULERS.pop(run_id, scheduler)


_lock_run = Locked(Run)


def _ended(scheduler: Scheduler) -> bool:
    """A run that has ended with no step still running: nothing moves it without a
    person, so its scheduler need not stay cached (it is rebuilt if it does move)."""
    state = scheduler.state
    return state.status in FINAL_RUN_STATUSES and not state.count("running")


def _configured(scheduler: Scheduler) -> Scheduler:
    """Give a run's Scheduler the deployment's limits, as they are now: the allowance of
    agent steps without an estimate and the bound on retries after lost leases."""
    allowance = StepAllowance(
        tokens=settings.FORGE_AGENT_STEP_TOKENS, cost=settings.FORGE_AGENT_STEP_COST
    )
    if scheduler.allowance != allowance:
        scheduler.allowance = allowance
    scheduler.max_lease_retries = settings.FORGE_STEP_MAX_LEASE_RETRIES
    return scheduler


def new_scheduler(run: Run) -> Scheduler:
    scheduler = Scheduler(
        graph_for(run.version),
        str(run.pk),
        plan_id=str(run.plan_id),
        plan_version=run.version.number,
        gate=gate(),
        previewer=_previewer(run.pk),
    )
    _SCHEDULERS.put(run.pk, _configured(scheduler))
    return scheduler


def _previewer(run_id: int) -> Previewer:
    """Previews a run's steps as this deployment's executor will run them."""
    return step_previewer(executor(), str(run_id), lambda: workspace_for(run_id))


def _caught_up(run: Run) -> Scheduler:
    scheduler = _SCHEDULERS.get(run.pk)
    if scheduler is None or scheduler.state.last_seq > run.last_seq:
        stored = event_rows.after(run.pk, 0)
        scheduler = Scheduler(
            _graph_of(run),
            str(run.pk),
            plan_id=str(run.plan_id),
            state=rebuild(str(run.pk), stored),
            gate=gate(),
            previewer=_previewer(run.pk),
        )
        _SCHEDULERS.put(run.pk, scheduler)
    elif scheduler.state.last_seq < run.last_seq:
        for event in event_rows.after(run.pk, scheduler.state.last_seq):
            scheduler.observe(event)
    graph = _graph_of(run)
    if scheduler.graph is not graph:
        scheduler.graph = graph  # another process resumed the run on a new version
    scheduler.events.clear()
    return _configured(scheduler)


def _persist(
    run: Run,
    scheduler: Scheduler,
    events: list[CoreEvent],
    projected: dict[str, StepState],
    writes: Batch,
) -> None:
    state = scheduler.state
    writes.add(*event_rows.insert(run.pk, events))
    touched: dict[str, None] = {}
    for event in events:
        if event.event_type == "run_resumed":
            create_step_runs(run, scheduler)
            touched.clear()
        elif event.step_id is not None:
            touched[event.step_id] = None
    for step_id in touched:
        if projected.get(step_id) is not state.steps[step_id]:
            step = state.steps[step_id]
            writes.add(
                _update_step.statement(step_fields(step), run.pk, state.plan_version, step_id)
            )


_RUN_PROJECTION = [
    "status",
    "used_steps",
    "used_tokens",
    "used_cost",
    "replans",
    "failed_step",
    "reset_steps",
    "preserved_steps",
    "blocked_reason",
    "awaiting_review",
    "last_seq",
    "finished_at",
    "version_id",
]
_update_run = Update(Run, _RUN_PROJECTION, where=("id",))


def _project_run(run: Run, scheduler: Scheduler) -> Statement:
    state = scheduler.state
    run.status = state.status
    run.used_steps, run.used_tokens, run.used_cost = (
        state.used_steps,
        state.used_tokens,
        state.used_cost,
    )
    run.replans = state.replans
    run.failed_step = state.failed_step or ""
    run.reset_steps, run.preserved_steps = list(state.reset), list(state.preserved)
    run.blocked_reason = state.blocked_reason
    run.awaiting_review = list(state.awaiting_review)
    run.last_seq = state.last_seq
    if state.status in FINAL_RUN_STATUSES and run.finished_at is None:
        run.finished_at = timezone.now()
    elif state.status not in FINAL_RUN_STATUSES:
        run.finished_at = None  # a budget_exhausted run resumed on a new version
    return _update_run.statement({name: getattr(run, name) for name in _RUN_PROJECTION}, run.pk)


def _tell_attention(run_id: int, events: list[CoreEvent]) -> None:
    """Once the transaction commits, tell whoever listens (``runs.signals``) about the
    events a person may need to hear about, and whether a wait may have ended."""
    if any(event.event_type in signals.ENDS_WAIT for event in events):
        transaction.on_commit(lambda: signals.waits_ended.send(sender=Run, run_id=run_id))
    notable = [
        {
            "seq": event.seq,
            "event_type": event.event_type,
            "step_id": event.step_id or "",
            "actor": event.actor,
            "reason": event.blocked_reason,
            "milestone": str((event.facts or {}).get("milestone", ""))
            if event.event_type == EventType.MILESTONE_REACHED
            else "",
        }
        for event in events
        if event.event_type in signals.ATTENTION
    ]
    if notable:
        transaction.on_commit(
            lambda: signals.run_attention.send(sender=Run, run_id=run_id, events=notable)
        )


def step_fields(step: StepState) -> dict[str, object]:
    """The ``StepRun`` columns that mirror a step's state."""
    return {
        "status": step.status,
        "attempt": step.attempt,
        "output": step.output,
        "error": step.error,
        "verdict": step.verdict,
        "tokens": step.tokens,
        "cost": step.cost,
        "reserved_tokens": step.reserved_tokens,
        "reserved_cost": step.reserved_cost,
        "approved_hash": step.approved_hash,
        "approved_by": step.approved_by,
        "artifacts": list(step.artifacts),
    }


STEP_FIELDS = tuple(step_fields(StepState()))
_update_step = Update(StepRun, STEP_FIELDS, where=("run", "plan_version", "step_id"))


_STEP_ROWS_PER_INSERT = 500


def create_step_runs(run: Run, scheduler: Scheduler) -> None:
    """A row per step of the run's version, written a slice at a time: model instances
    and the INSERT's parameters of a 5,000-step plan all at once were 30 MiB at the peak
    of the web process that starts the run."""
    version = scheduler.state.plan_version
    order = scheduler.graph.order
    for start in range(0, len(order), _STEP_ROWS_PER_INSERT):
        rows = []
        for position, step_id in enumerate(order[start : start + _STEP_ROWS_PER_INSERT], start):
            node = scheduler.graph.nodes[step_id]
            step = scheduler.state.steps[step_id]
            rows.append(
                StepRun(
                    run=run,
                    plan_version=version,
                    step_id=step_id,
                    position=position,
                    status=step.status,
                    attempt=step.attempt,
                    output=step.output,
                    error=step.error,
                    verdict=step.verdict,
                    tokens=step.tokens,
                    cost=step.cost,
                    tool_name=node.binding.tool.name if node.binding else "",
                    args_hash=node.binding.args_hash if node.binding else "",
                )
            )
        StepRun.objects.bulk_create(rows)
