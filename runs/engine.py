"""Stored runs driven by the core Scheduler, one transaction per decision.

``locked_run`` locks a run's row (PostgreSQL ``SELECT ... FOR UPDATE``; on SQLite the
IMMEDIATE transaction already serialises writers), hands out a Scheduler caught up with
the stored events, and on leaving writes the events the Scheduler added together with
the ``Run`` and ``StepRun`` projections, in the same transaction. Each process keeps its
schedulers between transactions and only folds in the events other processes wrote
since (``seq`` tells which), so a decision costs the same at step 1,000 as at step 1.
A transaction that fails drops the cached scheduler, which is then rebuilt from the
database: the database is the truth, the cache only saves work.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta

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
from runs.models import Run, RunEvent, StepRun

_SCHEDULERS: dict[int, Scheduler] = {}
_GRAPHS: OrderedDict[int, ExecutableGraph] = OrderedDict()
_GRAPH_CACHE_SIZE = 64
_graphs_tools: list[object] = [None]  # the tools snapshot the cached graphs were compiled with


def graph_for(version: PlanVersion) -> ExecutableGraph:
    """The compiled graph of a stored version, compiled once per process and tools
    snapshot with the deployment's compiler (the one plans used), so what was approved is
    what runs. Compiled with the tools as they are: this runs inside transactions, where
    nothing may wait on an MCP server (the worker discovers before it takes a lock)."""
    return _graph(version.pk, lambda: version)


def _graph(version_id: int, load: Callable[[], PlanVersion]) -> ExecutableGraph:
    # A tool changed: graphs compiled before would be refused at run time (stale_binding).
    snapshot = tools(refresh=False)
    if snapshot is not _graphs_tools[0]:
        _GRAPHS.clear()
        _graphs_tools[0] = snapshot
    # Keyed by id, so a worker's transaction never reads the version's (large) document
    # once its graph is cached.
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
        _GRAPHS[version_id] = graph
        if len(_GRAPHS) > _GRAPH_CACHE_SIZE:
            _GRAPHS.popitem(last=False)
    else:
        _GRAPHS.move_to_end(version_id)
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

    def became_ready(self) -> list[str]:
        """Steps made ready by this transaction's events, in the order they became so."""
        return [e.step_id for e in self.scheduler.events if e.step_status == "ready" and e.step_id]

    def flush(self) -> None:
        """Write the events decided so far and the steps' projections, so that a
        compare-and-swap on ``StepRun`` later in the transaction sees them."""
        events = self.scheduler.events[self.flushed :]
        if events:
            _persist(self.run, self.scheduler, events, self.projected)
            self.flushed = len(self.scheduler.events)


@contextmanager
def locked_run(run_id: int) -> Iterator[LockedRun]:
    try:
        with transaction.atomic():
            run = Run.objects.select_for_update().get(pk=run_id)
            locked = LockedRun(run, _caught_up(run))
            yield locked
            locked.flush()
            if locked.flushed:
                _project_run(run, locked.scheduler)
            _enqueue(run, locked.to_enqueue)
            _enqueue_later(run, locked.to_enqueue_later)
            _enqueue_replans(run, locked.scheduler)
            if locked.flushed:
                last_seq = run.last_seq
                transaction.on_commit(lambda: publish.run_changed(run.pk, last_seq))
                _tell_attention(run.pk, locked.scheduler.events)
    except BaseException:
        _SCHEDULERS.pop(run_id, None)
        raise


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
    _SCHEDULERS[run.pk] = _configured(scheduler)
    return scheduler


def _previewer(run_id: int) -> Previewer:
    """Previews a run's steps as this deployment's executor will run them."""
    return step_previewer(executor(), str(run_id), lambda: workspace_for(run_id))


def _caught_up(run: Run) -> Scheduler:
    scheduler = _SCHEDULERS.get(run.pk)
    if scheduler is None or scheduler.state.last_seq > run.last_seq:
        stored = [event_rows.from_row(row) for row in run.events.order_by("seq")]
        scheduler = Scheduler(
            _graph_of(run),
            str(run.pk),
            plan_id=str(run.plan_id),
            state=rebuild(str(run.pk), stored),
            gate=gate(),
            previewer=_previewer(run.pk),
        )
        _SCHEDULERS[run.pk] = scheduler
    elif scheduler.state.last_seq < run.last_seq:
        newer = run.events.filter(seq__gt=scheduler.state.last_seq).order_by("seq")
        for row in newer:
            scheduler.observe(event_rows.from_row(row))
    graph = _graph_of(run)
    if scheduler.graph is not graph:
        scheduler.graph = graph  # another process resumed the run on a new version
    scheduler.events.clear()
    return _configured(scheduler)


def _persist(
    run: Run, scheduler: Scheduler, events: list[CoreEvent], projected: dict[str, StepState]
) -> None:
    state = scheduler.state
    RunEvent.objects.bulk_create(event_rows.to_row(run, event) for event in events)
    touched: dict[str, None] = {}
    for event in events:
        if event.event_type == "run_resumed":
            create_step_runs(run, scheduler)
            touched.clear()
        elif event.step_id is not None:
            touched[event.step_id] = None
    for step_id in touched:
        if projected.get(step_id) is not state.steps[step_id]:
            _project_step(run, state.plan_version, step_id, state.steps[step_id])


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
    "last_seq",
    "finished_at",
    "version",
]


def _project_run(run: Run, scheduler: Scheduler) -> None:
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
    run.last_seq = state.last_seq
    if state.status in FINAL_RUN_STATUSES and run.finished_at is None:
        run.finished_at = timezone.now()
    elif state.status not in FINAL_RUN_STATUSES:
        run.finished_at = None  # a budget_exhausted run resumed on a new version
    run.save(update_fields=_RUN_PROJECTION)


def _tell_attention(run_id: int, events: list[CoreEvent]) -> None:
    """Once the transaction commits, tell whoever listens (``runs.signals``) about the
    events a person may need to hear about."""
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


def _enqueue(run: Run, step_ids: list[str]) -> None:
    from runs.tasks import run_step  # tasks import this module

    for step_id in step_ids:
        run_step.enqueue(run.pk, step_id)


def _enqueue_later(run: Run, delayed: list[tuple[str, float]]) -> None:
    from runs.tasks import run_step  # tasks import this module

    for step_id, seconds in delayed:
        after = timezone.now() + timedelta(seconds=seconds)
        run_step.using(run_after=after).enqueue(run.pk, step_id)


def _enqueue_replans(run: Run, scheduler: Scheduler) -> None:
    """A run of a plan that replans automatically (``replan: auto``) that needed a
    replan in this transaction: a worker asks the planner (``runs.replanning``)."""
    if scheduler.graph.document.replan != "auto":
        return
    from runs.tasks import replan_run  # tasks import this module

    for event in scheduler.events:
        if event.event_type == EventType.RUN_NEEDS_REPLAN:
            replan_run.enqueue(run.pk, event.seq)


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


def _project_step(run: Run, plan_version: int, step_id: str, step: StepState) -> None:
    StepRun.objects.filter(run=run, plan_version=plan_version, step_id=step_id).update(
        **step_fields(step)
    )


def create_step_runs(run: Run, scheduler: Scheduler) -> None:
    version = scheduler.state.plan_version
    rows = []
    for position, step_id in enumerate(scheduler.graph.order):
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
