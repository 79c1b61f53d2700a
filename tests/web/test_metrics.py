"""Metrics: exact numbers on a small history, the API, the page, its charts, permissions."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

import pytest

from accounts.roles import refusal
from audit.services import LoadedEvent, bulk_load_chain
from runs import metrics, metrics_charts
from runs.models import Run, RunEvent, StepApproval, StepRun

pytestmark = pytest.mark.django_db

SINCE = datetime(2026, 3, 1, tzinfo=UTC)
UNTIL = datetime(2026, 3, 3, tzinfo=UTC)


def at(day, hour, minute=0):
    return datetime(2026, 2 if day > 20 else 3, day, hour, minute, tzinfo=UTC)


EXPECTED = {
    "since": "2026-03-01T00:00:00+00:00",
    "until": "2026-03-03T00:00:00+00:00",
    "run_success_rate": {"value": 0.4, "succeeded": 2, "finished": 5},
    "average_replans_per_run": {"value": 4 / 6, "replans": 4, "runs": 6},
    "plan_drift_rate": {"value": 2 / 3, "drifted": 2, "resumes": 3},
    "approval_hit_rate": {"value": 0.5, "approved": 2, "rejected": 1, "requested": 4},
    "cost_per_successful_run": {"value": 0.75, "cost": 1.5, "runs": 2},
    "step_latency_ms": {"p50": 500.0, "p95": 1000.0, "steps": 10},
    "days": [
        {
            "date": "2026-03-01",
            "succeeded": 1,
            "failed": 1,
            "budget_exhausted": 1,
            "cancelled": 0,
            "steps": 4,
            "latency_p50_ms": 200.0,
            "latency_p95_ms": 400.0,
        },
        {
            "date": "2026-03-02",
            "succeeded": 1,
            "failed": 0,
            "budget_exhausted": 0,
            "cancelled": 1,
            "steps": 6,
            "latency_p50_ms": 700.0,
            "latency_p95_ms": 1000.0,
        },
    ],
}


@pytest.fixture
def history(approved_version, operator, approver):
    """Runs, steps, approvals and resumes around the period [1 March, 3 March) 2026."""
    runs = {}

    def run(name, status, created, finished=None, *, replans=0, cost=0.0):
        row = Run.objects.create(
            plan=approved_version.plan,
            version=approved_version,
            status=status,
            started_by=operator,
            finished_at=finished,
            replans=replans,
            used_cost=cost,
        )
        Run.objects.filter(pk=row.pk).update(created_at=created)
        runs[name] = row

    run("r1", "succeeded", at(1, 8), at(1, 9), cost=0.5)
    run("r2", "succeeded", at(1, 10), at(2, 1), replans=1, cost=1.0)
    run("r3", "failed", at(1, 11), at(1, 12), replans=2)
    run("r4", "cancelled", at(2, 5), at(2, 6))
    run("r5", "budget_exhausted", at(28, 20), at(1, 2), cost=9.0)  # started before
    run("r6", "succeeded", at(27, 1), at(28, 1), cost=100.0)  # wholly before
    run("r7", "running", at(2, 7), replans=1)  # not finished
    run("r8", "succeeded", at(2, 23), UNTIL, cost=50.0)  # finished as the period ends

    def steps(name, latencies, finished, version=1):
        for index, latency in enumerate(latencies):
            StepRun.objects.create(
                run=runs[name],
                plan_version=version,
                step_id=f"s{index}",
                position=index,
                status="succeeded",
                latency_ms=latency,
                finished_at=finished,
            )

    steps("r1", [400.0, 100.0, 300.0, 200.0], at(1, 8, 30))
    steps("r2", [1000.0, 500.0, 900.0, 600.0, 800.0, 700.0], at(2, 0, 30))
    steps("r6", [99_999.0], at(28, 0, 30))  # before the period
    steps("r8", [77_777.0], UNTIL)  # at its end: excluded
    steps("r4", [None], at(2, 5, 30))  # no latency (cancelled before it ran)

    def awaiting(name, step, created, version=1, decision=None):
        row = runs[name]
        RunEvent.objects.create(
            run=row,
            seq=RunEvent.objects.filter(run=row).count() + 1,
            plan_id=str(row.plan_id),
            plan_version=version,
            step_id=step,
            event_type="step_awaiting_approval",
            created_at=created,
        )
        if decision:
            StepApproval.objects.create(
                run=row,
                step_id=step,
                plan_version=version,
                args_hash="0" * 64,
                reviewer=approver,
                decision=decision,
            )

    awaiting("r1", "a", at(1, 8, 10), decision="approved")
    awaiting("r2", "b", at(1, 10, 10), decision="rejected")
    awaiting("r3", "c", at(1, 11, 10))  # still waiting
    awaiting("r2", "b", at(2, 0, 10), version=2, decision="approved")  # after a replan
    awaiting("r6", "x", at(27, 2), decision="approved")  # before the period

    def resumed(moment, drift, action="run.resumed"):
        payload = {"from_version": 1, "version": 2, "drift": drift}
        return LoadedEvent(moment, "operator", action, "run", "1", payload)

    bulk_load_chain(
        [
            resumed(at(28, 3), ["budget max_cost loosened from 1 to 2"]),  # before
            resumed(at(1, 12), ["approval before 'external_email' is no longer required"]),
            resumed(at(2, 1), []),
            resumed(at(2, 2), ["max_replans raised from 1 to 3"]),
            resumed(at(2, 3), ["not a resume"], action="run.started"),
        ]
    )
    return runs


# --- The numbers ------------------------------------------------------------------------


def test_every_metric_over_a_small_history_is_exact(history):
    assert metrics.compute(SINCE, UNTIL).to_data() == EXPECTED


def test_an_empty_period_has_no_rates_rather_than_zeros(history):
    result = metrics.compute(datetime(2025, 1, 1, tzinfo=UTC), datetime(2025, 1, 2, tzinfo=UTC))

    data = result.to_data()
    assert data["run_success_rate"] == {"value": None, "succeeded": 0, "finished": 0}
    assert data["approval_hit_rate"]["value"] is None
    assert data["step_latency_ms"] == {"p50": None, "p95": None, "steps": 0}
    assert data["days"] == [
        {
            "date": "2025-01-01",
            "succeeded": 0,
            "failed": 0,
            "budget_exhausted": 0,
            "cancelled": 0,
            "steps": 0,
            "latency_p50_ms": None,
            "latency_p95_ms": None,
        }
    ]


@pytest.mark.parametrize(
    ("values", "p", "expected"),
    [
        ([], 50, None),
        ([7.0], 95, 7.0),
        ([1.0, 2.0], 50, 1.0),
        ([1.0, 2.0, 3.0, 4.0], 50, 2.0),
        ([float(n) for n in range(1, 21)], 95, 19.0),
        ([float(n) for n in range(1, 101)], 95, 95.0),
    ],
)
def test_percentiles_are_nearest_rank(values, p, expected):
    assert metrics.percentile(values, p) == expected


def test_a_period_touches_whole_utc_days():
    since = datetime(2026, 3, 1, 22, tzinfo=UTC)

    assert [d.isoformat() for d in metrics.days_between(since, since + timedelta(hours=3))] == [
        "2026-03-01",
        "2026-03-02",
    ]
    assert len(metrics.days_between(SINCE, UNTIL)) == 2


# --- The API ----------------------------------------------------------------------------


def test_the_api_answers_the_same_numbers(history, api_client, viewer):
    response = api_client(viewer).get(
        "/api/v1/metrics", {"since": "2026-03-01T00:00:00Z", "until": "2026-03-03T00:00:00Z"}
    )

    assert response.status_code == 200
    assert response.json() == EXPECTED


def test_the_api_reads_times_without_an_offset_as_utc(history, api_client, viewer):
    response = api_client(viewer).get(
        "/api/v1/metrics", {"since": "2026-03-01T00:00:00", "until": "2026-03-03T00:00:00"}
    )

    assert response.json() == EXPECTED


def test_the_api_defaults_to_the_last_thirty_days(api_client, viewer):
    data = api_client(viewer).get("/api/v1/metrics").json()

    since, until = (datetime.fromisoformat(data[key]) for key in ("since", "until"))
    assert until - since == timedelta(days=30)
    assert abs((datetime.now(UTC) - until).total_seconds()) < 60
    assert len(data["days"]) == 31  # a period of 30 days that starts mid-day touches 31


@pytest.mark.parametrize(
    "query",
    [
        {"since": "2026-03-03T00:00:00Z", "until": "2026-03-01T00:00:00Z"},
        {"since": "2026-03-01T00:00:00Z", "until": "2026-03-01T00:00:00Z"},
        {"since": "2024-01-01T00:00:00Z", "until": "2026-01-01T00:00:00Z"},
        {"since": "yesterday"},
    ],
)
def test_the_api_refuses_a_period_that_is_not_one(api_client, viewer, query):
    response = api_client(viewer).get("/api/v1/metrics", query)

    assert response.status_code == 422
    assert response.json()["code"] == "validation_error"


def test_the_api_needs_credentials_and_the_metrics_view_permission(
    anonymous_client, api_client, stranger
):
    assert anonymous_client.get("/api/v1/metrics").status_code == 401
    response = api_client(stranger).get("/api/v1/metrics")
    assert response.status_code == 403
    assert response.json() == {
        "detail": refusal("metrics.view"),
        "code": "permission_denied",
    }


# --- The page ---------------------------------------------------------------------------


def card(body, key):
    match = re.search(
        rf'data-metric="{key}">\s*<h2>[^<]*</h2>\s*<p class="value">(.*?)</p>\s*'
        r'<p class="detail muted">(.*?)</p>',
        body,
        re.DOTALL,
    )
    value = re.sub(r"<[^>]+>", "", match.group(1))
    return value, match.group(2)


def test_the_page_shows_every_metric_for_a_chosen_period(history, session_client, viewer):
    response = session_client(viewer).get("/metrics/?start=2026-03-01&end=2026-03-02")

    assert response.status_code == 200
    body = response.content.decode()
    assert card(body, "run_success_rate") == ("40.0 %", "2 of 5 finished runs succeeded")
    assert card(body, "average_replans_per_run") == ("0.67", "4 replans over 6 runs started")
    assert card(body, "plan_drift_rate") == ("66.7 %", "2 of 3 resumes drifted")
    assert card(body, "approval_hit_rate") == (
        "50.0 %",
        "2 of 4 requests approved, 1 rejected, 1 waiting",
    )
    assert card(body, "cost_per_successful_run") == ("0.750", "1.50 spent by 2 succeeded runs")
    assert card(body, "step_latency") == ("500 ms / 1.0 s", "over 10 steps finished")
    assert '1 Mar 2026</time> to\n    <time datetime="2026-03-02">2 Mar 2026' in body


def test_the_page_links_to_the_api_for_the_same_period(history, session_client, viewer):
    client = session_client(viewer)
    body = client.get("/metrics/?start=2026-03-01&end=2026-03-02").content.decode()
    url = re.search(r'id="api-link" href="([^"]+)"', body).group(1).replace("&amp;", "&")

    assert client.get(url).json() == EXPECTED  # session auth, as the browser


def test_the_charts_are_accessible_svg_with_their_numbers(history, session_client, viewer):
    body = session_client(viewer).get("/metrics/?start=2026-03-01&end=2026-03-02").content.decode()

    assert body.count('role="img"') == 2
    assert '<title id="chart-outcomes-title">Run outcomes per day</title>' in body
    assert "5 finished: 2 succeeded, 1 failed, 1 budget exhausted, 1 cancelled." in body
    assert "<title>Sun 01 Mar: 1 succeeded</title>" in body
    assert "<title>Mon 02 Mar: p95 1.0 s over 6 steps</title>" in body
    assert body.count('<rect class="bar ') == 5
    assert "style=" not in body  # the CSP allows no inline style


def test_presets_are_whole_days_up_to_today(session_client, viewer):
    body = session_client(viewer).get("/metrics/?days=7").content.decode()

    today = datetime.now(UTC).date()
    assert f'<time datetime="{today - timedelta(days=6):%Y-%m-%d}">' in body
    assert f'<time datetime="{today:%Y-%m-%d}">' in body
    assert "(7 days, UTC)" in body
    assert 'class="chip active" href="?days=7"' in body


def test_a_bad_period_says_why_and_shows_the_default(session_client, viewer):
    client = session_client(viewer)

    backwards = client.get("/metrics/?start=2026-03-05&end=2026-03-01").content.decode()
    too_long = client.get("/metrics/?start=2024-01-01&end=2026-01-01").content.decode()
    half = client.get("/metrics/?start=2026-03-05").content.decode()

    assert "The period must end on or after its first day." in backwards
    assert "A period is at most 366 days." in too_long
    assert "Give both dates, or choose a preset period." in half
    assert "(30 days, UTC)" in backwards and 'value="2026-03-05"' in backwards


def test_the_page_needs_the_metrics_view_permission(session_client, stranger, anonymous_client):
    assert session_client(stranger).get("/metrics/").status_code == 403
    assert anonymous_client.get("/metrics/").status_code == 302


# --- Chart geometry ---------------------------------------------------------------------


def test_ticks_are_round_and_reach_the_maximum():
    assert metrics_charts.nice_ticks(0) == [0.0, 1.0]
    assert metrics_charts.nice_ticks(7) == [0, 2, 4, 6, 8]
    assert metrics_charts.nice_ticks(130) == [0, 50, 100, 150]
    assert metrics_charts.nice_ticks(3_600) == [0, 1000, 2000, 3000, 4000]
    assert metrics_charts.nice_ticks(1) == [0, 0.5, 1.0]
    assert metrics_charts.nice_ticks(1, whole=True) == [0, 1]


def test_stacked_bars_are_as_tall_as_their_counts(history):
    days = metrics.compute(SINCE, UNTIL).days

    chart = metrics_charts.outcome_bars(days)

    plot_height = chart.plot_bottom - chart.plot_top
    first_day = [bar for bar in chart.bars if bar.title.startswith("Sun 01 Mar")]
    assert [bar.kind for bar in first_day] == ["succeeded", "failed", "budget_exhausted"]
    assert [bar.height for bar in first_day] == [round(plot_height / 3, 1)] * 3  # ticks 0..3
    assert first_day[1].y + first_day[1].height == pytest.approx(first_day[0].y, abs=0.15)


def test_the_api_is_in_the_openapi_schema_with_its_definitions(api_client, viewer):
    schema = api_client(viewer).get("/api/v1/openapi.json").json()

    operation = schema["paths"]["/api/v1/metrics"]["get"]
    assert "plan_drift_rate" in operation["description"]
    assert "Needs metrics.view." in operation["description"]
    assert json.dumps(sorted(p["name"] for p in operation["parameters"])) == '["since", "until"]'
