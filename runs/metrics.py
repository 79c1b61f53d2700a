"""The numbers teams watch, over a period: how runs end, how often plans change under
them, how approvals go, what success costs, how long steps take.

``compute(since, until)`` reads the database only: one aggregate query per measure
(conditional counts in a single pass, grouped by day where a chart needs it), plus the
latencies of the period's finished steps, sorted by the database, for the percentiles
(SQLite has no percentile function). The period is ``[since, until)``; days are UTC.

Definitions (the metrics page and ``GET /api/v1/metrics`` state them too):

- run success rate: runs that *finished* in the period (``finished_at``; finished means
  succeeded, failed, budget_exhausted or cancelled) that succeeded, over all of them;
- average replans per run: the mean of ``Run.replans`` over runs *started* in the period;
- plan drift rate: of the resumes tried in the period (audit ``run.resumed``, and
  ``run.resume_refused``: a drifted version no person approved, which the run refused),
  the share whose new version dropped a constraint of the one it replaced (a non-empty
  ``drift`` in the audit payload, as ``runs.services.resume_run`` records it from
  ``forge.plan.drift.detect_drift``);
- approval hit rate: of the step approvals requested in the period
  (``step_awaiting_approval`` events), the share that were approved (an approved
  ``StepApproval`` for the same run, step and plan version, whenever it came); requests
  still waiting count as not approved;
- cost per successful run: the total ``used_cost`` of the runs that succeeded in the
  period over their number;
- step latency p50 and p95: nearest-rank percentiles of ``StepRun.latency_ms`` over the
  steps that finished in the period (``finished_at``), whatever their outcome.

A rate or mean whose denominator is zero is None ("no data"), never 0.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from django.db.models import Count, DateField, Exists, Func, OuterRef, Q, Sum

from audit.models import AuditEvent
from runs.models import Run, RunEvent, StepApproval, StepRun

FINISHED = ("succeeded", "failed", "budget_exhausted", "cancelled")
OUTCOMES = FINISHED  # the stacked bars, bottom to top
NO_DRIFT = '"drift":[]'  # how canonical JSON writes an empty drift list
MAX_DAYS = 366


@dataclass(frozen=True)
class Ratio:
    """``numerator / denominator``, or None when the denominator is 0."""

    numerator: float
    denominator: int

    @property
    def value(self) -> float | None:
        return self.numerator / self.denominator if self.denominator else None


@dataclass(frozen=True)
class Day:
    """One UTC day of the charts: run outcomes and step latency percentiles."""

    day: date
    outcomes: dict[str, int]
    steps: int
    latency_p50: float | None
    latency_p95: float | None

    @property
    def finished(self) -> int:
        return sum(self.outcomes.values())


@dataclass(frozen=True)
class Metrics:
    since: datetime
    until: datetime
    run_success: Ratio  # succeeded / finished
    replans: Ratio  # replans / runs started
    drift: Ratio  # drifted resumes / resumes
    approvals: Ratio  # approved requests / requests
    approvals_rejected: int  # requests that were rejected (the rest of the misses wait)
    cost: Ratio  # cost of succeeded runs / succeeded runs
    steps: int  # steps finished, with a latency
    latency_p50: float | None
    latency_p95: float | None
    days: tuple[Day, ...]

    def to_data(self) -> dict[str, object]:
        """The API's answer (``runs.metrics_api``)."""
        return {
            "since": self.since.isoformat(),
            "until": self.until.isoformat(),
            "run_success_rate": {
                "value": self.run_success.value,
                "succeeded": int(self.run_success.numerator),
                "finished": self.run_success.denominator,
            },
            "average_replans_per_run": {
                "value": self.replans.value,
                "replans": int(self.replans.numerator),
                "runs": self.replans.denominator,
            },
            "plan_drift_rate": {
                "value": self.drift.value,
                "drifted": int(self.drift.numerator),
                "resumes": self.drift.denominator,
            },
            "approval_hit_rate": {
                "value": self.approvals.value,
                "approved": int(self.approvals.numerator),
                "rejected": self.approvals_rejected,
                "requested": self.approvals.denominator,
            },
            "cost_per_successful_run": {
                "value": self.cost.value,
                "cost": self.cost.numerator,
                "runs": self.cost.denominator,
            },
            "step_latency_ms": {
                "p50": self.latency_p50,
                "p95": self.latency_p95,
                "steps": self.steps,
            },
            "days": [
                {
                    "date": day.day.isoformat(),
                    **{outcome: day.outcomes[outcome] for outcome in OUTCOMES},
                    "steps": day.steps,
                    "latency_p50_ms": day.latency_p50,
                    "latency_p95_ms": day.latency_p95,
                }
                for day in self.days
            ],
        }


def compute(since: datetime, until: datetime) -> Metrics:
    """Every metric over ``[since, until)`` (aware datetimes; see the module's definitions)."""
    if until <= since:
        raise ValueError("the period must end after it starts")
    outcomes_by_day, cost = _finished_runs(since, until)
    latencies_by_day = _step_latencies(since, until)
    all_latencies = sorted(value for values in latencies_by_day.values() for value in values)
    approvals, rejected = _approvals(since, until)
    days = tuple(
        Day(
            day,
            outcomes_by_day.get(day, dict.fromkeys(OUTCOMES, 0)),
            len(latencies_by_day.get(day, ())),
            percentile(latencies_by_day.get(day, ()), 50),
            percentile(latencies_by_day.get(day, ()), 95),
        )
        for day in days_between(since, until)
    )
    succeeded = sum(day.outcomes["succeeded"] for day in days)
    finished = sum(day.finished for day in days)
    return Metrics(
        since=since,
        until=until,
        run_success=Ratio(succeeded, finished),
        replans=_replans(since, until),
        drift=_drift(since, until),
        approvals=approvals,
        approvals_rejected=rejected,
        cost=Ratio(cost, succeeded),
        steps=len(all_latencies),
        latency_p50=percentile(all_latencies, 50),
        latency_p95=percentile(all_latencies, 95),
        days=days,
    )


def percentile(sorted_values: Sequence[float], p: float) -> float | None:
    """The nearest-rank ``p``-th percentile of ascending values: the smallest value with
    at least p% of the values at or below it. None for no values."""
    if not sorted_values:
        return None
    rank = max(1, math.ceil(p / 100 * len(sorted_values)))
    return sorted_values[rank - 1]


def days_between(since: datetime, until: datetime) -> list[date]:
    """The UTC days that ``[since, until)`` touches, in order."""
    first = since.astimezone(UTC).date()
    last = (until.astimezone(UTC) - timedelta(microseconds=1)).date()
    return [first + timedelta(days=n) for n in range((last - first).days + 1)]


def day_start(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=UTC)


# --- The queries ----------------------------------------------------------------------


class UTCDay(Func):  # type: ignore[misc]
    """The UTC date of a datetime column. On SQLite, where Django stores UTC as text, its
    first ten characters: ``TruncDate`` would call a Python function per row there."""

    output_field = DateField()
    template = "(%(expressions)s AT TIME ZONE 'UTC')::date"

    def as_sqlite(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        return self.as_sql(compiler, connection, template="substr(%(expressions)s, 1, 10)", **extra)


def _finished_runs(since: datetime, until: datetime) -> tuple[dict[date, dict[str, int]], float]:
    """Runs that finished in the period, counted per day and outcome, in one query; and
    the cost of the ones that succeeded."""
    rows = (
        Run.objects.filter(finished_at__gte=since, finished_at__lt=until, status__in=FINISHED)
        .annotate(day=UTCDay("finished_at"))
        .values("day")
        .annotate(
            cost=Sum("used_cost", filter=Q(status="succeeded"), default=0.0),
            **{status: Count("pk", filter=Q(status=status)) for status in OUTCOMES},
        )
        .order_by()
    )
    by_day: dict[date, dict[str, int]] = {}
    cost = 0.0
    for row in rows:
        by_day[row["day"]] = {status: row[status] for status in OUTCOMES}
        cost += row["cost"]
    return by_day, cost


def _replans(since: datetime, until: datetime) -> Ratio:
    totals = Run.objects.filter(created_at__gte=since, created_at__lt=until).aggregate(
        runs=Count("pk"), replans=Sum("replans", default=0)
    )
    return Ratio(totals["replans"], totals["runs"])


def _drift(since: datetime, until: datetime) -> Ratio:
    tried = AuditEvent.objects.filter(
        action__in=("run.resumed", "run.resume_refused"), at__gte=since, at__lt=until
    )
    totals = tried.aggregate(
        resumes=Count("seq"), drifted=Count("seq", filter=~Q(payload__contains=NO_DRIFT))
    )
    return Ratio(totals["drifted"], totals["resumes"])


def _approvals(since: datetime, until: datetime) -> tuple[Ratio, int]:
    def decided(decision: str) -> Exists:
        return Exists(
            StepApproval.objects.filter(
                run_id=OuterRef("run_id"),
                step_id=OuterRef("step_id"),
                plan_version=OuterRef("plan_version"),
                decision=decision,
            )
        )

    totals = RunEvent.objects.filter(
        event_type="step_awaiting_approval", created_at__gte=since, created_at__lt=until
    ).aggregate(
        requested=Count("pk"),
        approved=Count("pk", filter=Q(decided("approved"))),
        rejected=Count("pk", filter=Q(decided("rejected"))),
    )
    return Ratio(totals["approved"], totals["requested"]), totals["rejected"]


def _step_latencies(since: datetime, until: datetime) -> dict[date, list[float]]:
    """Latencies of the steps finished in the period, ascending within each UTC day."""
    rows = (
        StepRun.objects.filter(
            finished_at__gte=since, finished_at__lt=until, latency_ms__isnull=False
        )
        .annotate(day=UTCDay("finished_at"))
        .order_by("latency_ms")
        .values_list("day", "latency_ms")
    )
    by_day: dict[date, list[float]] = defaultdict(list)
    for day, latency in rows:
        by_day[day].append(latency)
    return by_day
