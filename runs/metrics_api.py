"""``GET /api/v1/metrics``: the metrics page's numbers over a period (needs metrics.view).

No ``from __future__ import annotations`` here: ninja reads the operations' annotations
at runtime.
"""

from datetime import UTC, timedelta
from typing import Annotated, Any

from django.http import HttpRequest
from django.utils import timezone
from ninja import Field, Query, Router, Schema
from pydantic import AfterValidator, model_validator

from accounts.permissions import require_permission
from audit.schemas import Moment
from runs import metrics

router = Router(tags=["metrics"])

DEFAULT_PERIOD = timedelta(days=30)


def _aware(moment: Any) -> Any:
    # A time without an offset is UTC, as everywhere in the API.
    return moment.replace(tzinfo=UTC) if moment is not None and moment.tzinfo is None else moment


class MetricsPeriod(Schema):
    since: Annotated[Moment, AfterValidator(_aware)] = Field(
        None, description="from (inclusive; ISO 8601, UTC if naive); default: until - 30 days"
    )
    until: Annotated[Moment, AfterValidator(_aware)] = Field(
        None, description="to (exclusive; ISO 8601, UTC if naive); default: now"
    )

    @model_validator(mode="after")
    def _a_period(self) -> "MetricsPeriod":
        until = self.until or timezone.now()
        since = self.since or until - DEFAULT_PERIOD
        if since >= until:
            raise ValueError("since must be before until")
        if until - since > timedelta(days=metrics.MAX_DAYS):
            raise ValueError(f"a period is at most {metrics.MAX_DAYS} days")
        self.since, self.until = since, until
        return self


class RateOut(Schema):
    value: float | None = Field(description="null when there is nothing to count")


class SuccessOut(RateOut):
    succeeded: int
    finished: int


class ReplansOut(RateOut):
    replans: int
    runs: int


class DriftOut(RateOut):
    drifted: int
    resumes: int


class ApprovalsOut(RateOut):
    approved: int
    rejected: int
    requested: int


class CostOut(RateOut):
    cost: float
    runs: int


class LatencyOut(Schema):
    p50: float | None
    p95: float | None
    steps: int


class DayOut(Schema):
    date: str
    succeeded: int
    failed: int
    budget_exhausted: int
    cancelled: int
    steps: int
    latency_p50_ms: float | None
    latency_p95_ms: float | None


class MetricsOut(Schema):
    since: str
    until: str
    run_success_rate: SuccessOut
    average_replans_per_run: ReplansOut
    plan_drift_rate: DriftOut
    approval_hit_rate: ApprovalsOut
    cost_per_successful_run: CostOut
    step_latency_ms: LatencyOut
    days: list[DayOut]


@router.get("/metrics", response=MetricsOut)
@require_permission("metrics.view")
def get_metrics(request: HttpRequest, period: Query[MetricsPeriod]) -> dict[str, Any]:
    """Run and step metrics over ``[since, until)`` (default: the last 30 days), the same
    numbers as the metrics page; ``days`` holds the per-day series of its charts (UTC).

    - ``run_success_rate``: succeeded / finished, over runs that finished in the period
      (finished: succeeded, failed, budget_exhausted or cancelled).
    - ``average_replans_per_run``: mean ``replans`` of the runs started in the period.
    - ``plan_drift_rate``: of the resumes in the period (audit ``run.resumed``), the
      share whose new version dropped a constraint of the one it replaced (a non-empty
      ``drift``).
    - ``approval_hit_rate``: of the step approvals requested in the period
      (``step_awaiting_approval`` events), the share approved; waiting ones count as
      not approved, ``rejected`` says how many were refused.
    - ``cost_per_successful_run``: total ``used_cost`` of the runs that succeeded in the
      period / their number.
    - ``step_latency_ms``: nearest-rank p50 and p95 of the latency of the steps that
      finished in the period.

    A rate with nothing to count is null. A period is at most 366 days.
    """
    assert period.since is not None and period.until is not None  # set by the validator
    return metrics.compute(period.since, period.until).to_data()
