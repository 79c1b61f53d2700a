"""The operator's and the reviewer's view of how runs go, in the browser: the metrics of a
month of seeded history, other periods, the charts with their numbers, and the API link."""

from __future__ import annotations

import io
import re
from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import expect

from bench.seed_load import load

from .conftest import shoot

pytestmark = pytest.mark.django_db(transaction=True)


def card_value(page, key):
    return page.locator(f"#metric-{key} .value").inner_text().replace("\n", " ")


def test_an_operator_reads_a_month_of_runs_and_compares_periods(page, people):
    load(runs=400, audit_events=3_000, days=40, out=io.StringIO())
    people.login(page, people.make("olga", "operator"))

    page.goto("/metrics/")
    today = datetime.now(UTC).date()
    expect(page.locator("#period-label")).to_contain_text("(30 days, UTC)")
    expect(page.locator("a.chip.active")).to_have_text("Last 30 days")
    for key in (
        "run_success_rate",
        "average_replans_per_run",
        "plan_drift_rate",
        "approval_hit_rate",
        "cost_per_successful_run",
        "step_latency",
    ):
        assert "—" not in card_value(page, key), key
    success = card_value(page, "run_success_rate")
    assert re.fullmatch(r"\d{1,3}\.\d %", success)
    expect(page.locator("aside .big")).to_have_text(success)  # the number beside the chart
    assert page.locator("#chart-outcomes rect.bar").count() > 40
    assert page.locator("#chart-latency circle.dot.p95").count() >= 25
    expect(page.locator("#chart-outcomes title").first).to_have_text("Run outcomes per day")
    shoot(page, "1-month")

    # The same numbers from the API, with the browser's session.
    api = page.locator("#api-link").get_attribute("href")
    data = page.request.get(api).json()
    assert f"{data['run_success_rate']['value'] * 100:.1f} %" == success
    assert len(data["days"]) == 30
    assert data["days"][-1]["date"] == today.isoformat()

    # The daily numbers, as a table.
    page.get_by_text("The numbers per day").click()
    expect(page.locator("#daily-numbers tbody tr")).to_have_count(30)
    finished = sum(
        day[k]
        for day in data["days"]
        for k in ("succeeded", "failed", "budget_exhausted", "cancelled")
    )
    expect(page.locator(".legend-list li.total strong").first).to_have_text(f"{finished:,}")
    shoot(page, "2-daily")

    # A week, then a chosen fortnight.
    page.get_by_role("link", name="Last 7 days").click()
    expect(page.locator("#period-label")).to_contain_text("(7 days, UTC)")
    expect(page.locator("#daily-numbers tbody tr")).to_have_count(7)
    start, end = today - timedelta(days=20), today - timedelta(days=7)
    page.fill("#id_start", start.isoformat())
    page.fill("#id_end", end.isoformat())
    page.get_by_role("button", name="Show").click()
    expect(page.locator("#period-label")).to_contain_text("(14 days, UTC)")
    expect(page.locator("a.chip.active")).to_have_count(0)
    expect(page.locator("#id_start")).to_have_value(start.isoformat())
    shoot(page, "3-fortnight")

    # A period that ends before it starts is refused, saying why.
    page.fill("#id_start", end.isoformat())
    page.fill("#id_end", start.isoformat())
    page.get_by_role("button", name="Show").click()
    expect(page.locator(".period .errors")).to_contain_text(
        "The period must end on or after its first day."
    )


def test_an_empty_period_says_there_is_nothing_to_count(page, people):
    people.login(page, people.make("vera", "viewer"))

    page.goto("/metrics/?days=7")

    expect(page.locator("#metric-run_success_rate .value")).to_have_text("—")
    expect(page.locator("#chart-outcomes .no-data")).to_have_text("No data in this period")
    shoot(page, "empty")


def test_the_metrics_page_needs_the_metrics_view_permission(page, people):
    people.login(page, people.make("nobody"))

    assert page.goto("/metrics/").status == 403
