"""What ``/metrics/prometheus`` says: one ``prometheus_client`` collector that reads the
database when it is scraped.

Every figure but one is the database's, read at scrape time, so any web process answers
for the whole deployment (its workers included) and nothing is counted in one process
and lost in another; a scrape costs one query per family (the approval waits' reads a
row per decided step approval: people's decisions, thousands rather than millions).
The exception is websocket watchers, which only the process holding them knows
(``forge_websocket_watchers``, labelled with that process). Seed 003's five figures are
``runs.metrics.compute`` over the metrics page's default period (the last
``WINDOW_DAYS`` days), the same queries as the page and ``GET /api/v1/metrics``; a
figure with nothing to count is left out.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from datetime import timedelta

from django.db.models import Count, F, Max, Min, OuterRef, Q, Subquery, Sum
from django.utils import timezone
from django_tasks_db.models import DBTaskResult
from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

from forge.runtime import RUN_STATUSES, STEP_STATUSES
from runs import metrics
from runs.feed import watcher_count
from runs.models import Run, RunEvent, StepApproval, StepRun

__all__ = [
    "APPROVAL_BUCKETS_S",
    "DURATION_BUCKETS_S",
    "REGISTRY",
    "WINDOW_DAYS",
    "ForgeCollector",
]

WINDOW_DAYS = 30  # the metrics page's default period
# Step durations, in seconds: noop steps take milliseconds, agent steps minutes.
DURATION_BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900)
# Approval waits, in seconds: a minute to a week.
APPROVAL_BUCKETS_S = (60, 300, 900, 1800, 3600, 4 * 3600, 8 * 3600, 86400, 3 * 86400, 7 * 86400)
PROCESS = f"{socket.gethostname()}:{os.getpid()}"


class ForgeCollector(Collector):
    def describe(self) -> list[Metric]:
        # Nothing at registration: describing would query the database at import time.
        return []

    def collect(self) -> Iterator[Metric]:
        now = timezone.now()
        yield from _seed_figures(metrics.compute(now - timedelta(days=WINDOW_DAYS), now))
        yield _by_status("forge_runs", "Runs by status.", Run.objects.all(), RUN_STATUSES)
        yield _by_status(
            "forge_steps",
            "Steps of the versions runs run now, by status.",
            StepRun.objects.filter(plan_version=F("run__version__number")),
            STEP_STATUSES,
        )
        yield _step_durations()
        yield from _queue(now)
        yield from _approval_waits(now)
        yield _approval_decisions()
        yield _slots_busy()
        watchers = GaugeMetricFamily(
            "forge_websocket_watchers",
            "Websockets watching a run, in the web process that answered the scrape.",
            labels=["process"],
        )
        watchers.add_metric([PROCESS], watcher_count())
        yield watchers


def _seed_figures(figures: metrics.Metrics) -> Iterator[Metric]:
    window = f"{WINDOW_DAYS}d"
    for name, doc, ratio in (
        ("forge_run_success_rate", "Finished runs that succeeded.", figures.run_success),
        ("forge_replans_per_run", "Mean replans of the runs started.", figures.replans),
        ("forge_plan_drift_rate", "Resumes whose new version dropped a constraint.", figures.drift),
        (
            "forge_approval_hit_rate",
            "Step approvals requested that were granted.",
            figures.approvals,
        ),
        ("forge_cost_per_successful_run", "Cost of the succeeded runs per run.", figures.cost),
    ):
        family = GaugeMetricFamily(
            name, f"{doc} Over the window (the metrics page's numbers).", labels=["window"]
        )
        if ratio.value is not None:
            family.add_metric([window], ratio.value)
        yield family


def _by_status(name: str, doc: str, rows: object, statuses: tuple[str, ...]) -> Metric:
    counted = dict(rows.values_list("status").annotate(n=Count("pk")).order_by())  # type: ignore[attr-defined]
    family = GaugeMetricFamily(name, doc, labels=["status"])
    for status in statuses:
        family.add_metric([status], counted.get(status, 0))
    return family


def _step_durations() -> Metric:
    """Every finished step's latency by tool, cumulative per bucket: one query."""
    buckets = {
        f"le_{i}": Count("pk", filter=Q(latency_ms__lte=bound * 1000))
        for i, bound in enumerate(DURATION_BUCKETS_S)
    }
    rows = (
        StepRun.objects.filter(finished_at__isnull=False, latency_ms__isnull=False)
        .values("tool_name")
        .annotate(total=Count("pk"), sum_ms=Sum("latency_ms"), **buckets)
        .order_by("tool_name")
    )
    family = HistogramMetricFamily(
        "forge_step_duration_seconds",
        "How long finished steps took, by tool (an agent step's tool is empty).",
        labels=["tool"],
    )
    for row in rows:
        counts = [(_bound(b), row[f"le_{i}"]) for i, b in enumerate(DURATION_BUCKETS_S)]
        family.add_metric(
            [row["tool_name"]], [*counts, ("+Inf", row["total"])], row["sum_ms"] / 1000
        )
    return family


def _bound(seconds: float) -> str:
    return repr(float(seconds))


def _queue(now: object) -> Iterator[Metric]:
    rows = (
        DBTaskResult.objects.ready()
        .values("task_path")
        .annotate(n=Count("pk"), oldest=Min("enqueued_at"))
        .order_by("task_path")
    )
    depth = GaugeMetricFamily(
        "forge_queue_depth", "Tasks ready to run and not yet taken, by task.", labels=["task"]
    )
    age = GaugeMetricFamily(
        "forge_queue_oldest_age_seconds",
        "How long the oldest ready task has waited, by task (run_step: a ready step).",
        labels=["task"],
    )
    for row in rows:
        depth.add_metric([row["task_path"]], row["n"])
        age.add_metric([row["task_path"]], (now - row["oldest"]).total_seconds())  # type: ignore[operator]
    yield depth
    yield age


def _approval_waits(now: object) -> Iterator[Metric]:
    """Steps waiting for a person's approval now, and since when (their latest
    ``step_awaiting_approval`` event)."""
    asked = (
        RunEvent.objects.filter(
            run_id=OuterRef("run_id"),
            step_id=OuterRef("step_id"),
            plan_version=OuterRef("plan_version"),
            event_type="step_awaiting_approval",
        )
        .values("run_id")
        .annotate(at=Max("created_at"))
        .values("at")
    )
    waiting = list(
        StepRun.objects.filter(status="awaiting_approval")
        .annotate(asked=Subquery(asked))
        .values_list("asked", flat=True)
    )
    count = GaugeMetricFamily("forge_approvals_waiting", "Steps waiting for a person's approval.")
    count.add_metric([], len(waiting))
    yield count
    oldest = GaugeMetricFamily(
        "forge_approval_oldest_wait_seconds",
        "How long the step that has waited longest for approval has waited (0: none).",
    )
    times = [asked for asked in waiting if asked is not None]
    oldest.add_metric([], (now - min(times)).total_seconds() if times else 0.0)  # type: ignore[operator]
    yield oldest


def _approval_decisions() -> Metric:
    """How long each decided step approval waited: from the step's latest request for
    approval before the decision to the decision (a person's approval or rejection)."""
    asked = (
        RunEvent.objects.filter(
            run_id=OuterRef("run_id"),
            step_id=OuterRef("step_id"),
            plan_version=OuterRef("plan_version"),
            event_type="step_awaiting_approval",
            created_at__lte=OuterRef("created_at"),
        )
        .values("run_id")
        .annotate(at=Max("created_at"))
        .values("at")
    )
    rows = (
        StepApproval.objects.filter(decision__in=("approved", "rejected"))
        .annotate(asked=Subquery(asked))
        .values_list("decision", "asked", "created_at")
    )
    waits: dict[str, list[float]] = {"approved": [], "rejected": []}
    for decision, asked_at, decided_at in rows:
        if asked_at is not None:
            waits[decision].append(max(0.0, (decided_at - asked_at).total_seconds()))
    family = HistogramMetricFamily(
        "forge_approval_wait_seconds",
        "How long decided step approvals waited for their decision, by decision.",
        labels=["decision"],
    )
    for decision, seconds in waits.items():
        counts = [
            (_bound(bound), sum(1 for wait in seconds if wait <= bound))
            for bound in APPROVAL_BUCKETS_S
        ]
        family.add_metric([decision], [*counts, ("+Inf", len(seconds))], sum(seconds))
    return family


def _slots_busy() -> Metric:
    """Running steps by the worker that holds their lease (``host:pid``): its slots
    that are busy."""
    rows = (
        StepRun.objects.filter(status="running")
        .exclude(lease_owner="")
        .values("lease_owner")
        .annotate(n=Count("pk"))
        .order_by("lease_owner")
    )
    family = GaugeMetricFamily(
        "forge_worker_slots_busy", "Steps running on each worker process.", labels=["worker"]
    )
    for row in rows:
        family.add_metric([row["lease_owner"]], row["n"])
    return family


# The registry /metrics/prometheus renders: Forge's collector only (no process metrics:
# a scrape through a load balancer would mix processes).
REGISTRY = CollectorRegistry(auto_describe=False)
REGISTRY.register(ForgeCollector())
