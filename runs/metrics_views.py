"""The metrics page at /metrics/: the numbers of ``runs.metrics`` over a chosen period,
as cards, two server-rendered SVG charts with their numbers beside them, the
definitions, and a link to the same numbers from ``GET /api/v1/metrics``. Needs
``metrics.view``.

A period is whole UTC days: the last 7, 30 (the default) or 90 days up to today, or
from one date to another, both included; at most ``metrics.MAX_DAYS`` days.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any
from urllib.parse import urlencode

from django import forms
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET

from accounts.permissions import ensure_permission
from runs import metrics, metrics_charts
from runs.metrics_charts import OUTCOME_LABELS, format_ms

PRESETS = (7, 30, 90)
DEFAULT_DAYS = 30


class DateInput(forms.DateInput):
    input_type = "date"


class PeriodForm(forms.Form):
    """Either ``days`` (the last N days, today included) or ``start`` and ``end`` dates."""

    days = forms.TypedChoiceField(
        required=False, coerce=int, choices=[(n, n) for n in PRESETS], empty_value=None
    )
    start = forms.DateField(required=False, widget=DateInput(), label="From")
    end = forms.DateField(required=False, widget=DateInput(), label="To (included)")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        start, end = data.get("start"), data.get("end")
        if (start is None) != (end is None):
            raise forms.ValidationError("Give both dates, or choose a preset period.")
        if start is not None and end is not None:
            if end < start:
                self.add_error("end", "The period must end on or after its first day.")
            elif (end - start).days + 1 > metrics.MAX_DAYS:
                self.add_error("end", f"A period is at most {metrics.MAX_DAYS} days.")
        return data

    def period(self, today: date) -> tuple[date, date, int | None]:
        """First and last day (both included) and the preset, once valid."""
        data = self.cleaned_data if self.is_bound and self.is_valid() else {}
        if data.get("start") is not None:
            return data["start"], data["end"], None
        days = data.get("days") or DEFAULT_DAYS
        return today - timedelta(days=days - 1), today, days


@require_GET
def metrics_page(request: HttpRequest) -> HttpResponse:
    ensure_permission(request.user, "metrics.view")
    form = PeriodForm(request.GET or None)
    today = timezone.now().date()
    first, last, preset = form.period(today)
    since, until = metrics.day_start(first), metrics.day_start(last + timedelta(days=1))
    result = metrics.compute(since, until)
    api_query = urlencode({"since": since.isoformat(), "until": until.isoformat()})
    context = {
        "form": form,
        "presets": PRESETS,
        "preset": preset,
        "first": first,
        "last": last,
        "day_count": (last - first).days + 1,
        "m": result,
        "cards": _with_parts(_cards(result)),
        "outcomes": metrics_charts.outcome_bars(result.days),
        "latency": metrics_charts.latency_lines(result.days),
        "outcome_totals": [
            (key, label, sum(day.outcomes[key] for day in result.days))
            for key, label in OUTCOME_LABELS.items()
        ],
        "days": [_day_row(day) for day in result.days],
        "outcomes_desc": (
            f"Stacked bars, one per UTC day from {first:%d %b %Y} to {last:%d %b %Y}: the runs "
            f"that finished that day by outcome. {_outcome_sentence(result)}"
        ),
        "latency_desc": (
            "Two lines, one point per UTC day with finished steps: the 50th and 95th "
            f"percentile of step latency. Over the period: {_latency_sentence(result)}"
        ),
        "latency_p50": "—" if result.latency_p50 is None else format_ms(result.latency_p50),
        "latency_p95": "—" if result.latency_p95 is None else format_ms(result.latency_p95),
        "api_url": f"{reverse('api:get_metrics')}?{api_query}",
    }
    return render(request, "metrics/page.html", context)


def percent(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.1f} %"


def _cards(m: metrics.Metrics) -> list[dict[str, Any]]:
    approvals_waiting = m.approvals.denominator - int(m.approvals.numerator) - m.approvals_rejected
    return [
        {
            "key": "run_success_rate",
            "label": "Run success rate",
            "value": percent(m.run_success.value),
            "detail": f"{int(m.run_success.numerator):,} of {m.run_success.denominator:,} "
            "finished runs succeeded",
            "definition": "Runs that finished in the period (succeeded, failed, budget "
            "exhausted or cancelled) and succeeded, over all of them.",
        },
        {
            "key": "average_replans_per_run",
            "label": "Average replans per run",
            "value": "—" if m.replans.value is None else f"{m.replans.value:.2f}",
            "detail": f"{int(m.replans.numerator):,} replans over {m.replans.denominator:,} "
            "runs started",
            "definition": "The mean number of replans of the runs started in the period.",
        },
        {
            "key": "plan_drift_rate",
            "label": "Plan drift rate",
            "value": percent(m.drift.value),
            "detail": f"{int(m.drift.numerator):,} of {m.drift.denominator:,} resumes drifted",
            "definition": "Of the runs resumed on a new version in the period, the share "
            "whose new version dropped a constraint of the one it replaced (an approval "
            "requirement, a step the deliverable needed, a budget limit, the replan cap, "
            "the risk level), as recorded in the audit trail.",
        },
        {
            "key": "approval_hit_rate",
            "label": "Approval hit rate",
            "value": percent(m.approvals.value),
            "detail": f"{int(m.approvals.numerator):,} of {m.approvals.denominator:,} requests "
            f"approved, {m.approvals_rejected:,} rejected, {max(approvals_waiting, 0):,} waiting",
            "definition": "Of the step approvals requested in the period (steps that paused "
            "for a person), the share that were approved; requests still waiting count as "
            "not approved.",
        },
        {
            "key": "cost_per_successful_run",
            "label": "Cost per successful run",
            "value": "—" if m.cost.value is None else f"{m.cost.value:,.3f}",
            "detail": f"{m.cost.numerator:,.2f} spent by {m.cost.denominator:,} succeeded runs",
            "definition": "The cost used by the runs that succeeded in the period, over "
            "their number (in the plans' budget unit).",
        },
        {
            "key": "step_latency",
            "label": "Step latency p50 / p95",
            "value": "—"
            if m.latency_p50 is None or m.latency_p95 is None
            else f"{format_ms(m.latency_p50)} / {format_ms(m.latency_p95)}",
            "parts": ["—"]
            if m.latency_p50 is None or m.latency_p95 is None
            else [format_ms(m.latency_p50), format_ms(m.latency_p95)],
            "detail": f"over {m.steps:,} steps finished",
            "definition": "Nearest-rank 50th and 95th percentiles of the latency of the steps "
            "that finished in the period, whatever their outcome.",
        },
    ]


def _outcome_sentence(m: metrics.Metrics) -> str:
    totals = ", ".join(
        f"{sum(day.outcomes[key] for day in m.days):,} {label.lower()}"
        for key, label in OUTCOME_LABELS.items()
    )
    return f"{m.run_success.denominator:,} finished: {totals}."


def _latency_sentence(m: metrics.Metrics) -> str:
    if m.latency_p50 is None or m.latency_p95 is None:
        return "no finished steps."
    return f"p50 {format_ms(m.latency_p50)}, p95 {format_ms(m.latency_p95)} over {m.steps:,} steps."


def _with_parts(cards: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"parts": [card["value"]], **card} for card in cards]


def _day_row(day: metrics.Day) -> dict[str, Any]:
    return {
        "day": day.day,
        "outcomes": [day.outcomes[key] for key in OUTCOME_LABELS],
        "finished": day.finished,
        "steps": day.steps,
        "p50": "—" if day.latency_p50 is None else format_ms(day.latency_p50),
        "p95": "—" if day.latency_p95 is None else format_ms(day.latency_p95),
    }
