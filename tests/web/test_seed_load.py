"""``bench.seed_load``: a history for load tests that pages and metrics can read."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.utils import timezone

from audit.models import AuditEvent
from audit.services import verify
from bench.seed_load import NotEmpty, load
from runs import metrics
from runs.models import Run, RunEvent, StepRun

pytestmark = pytest.mark.django_db


def seed(**options):
    out = io.StringIO()
    options = {"runs": 60, "audit_events": 800, "days": 10, **options}
    load(out=out, **options)
    return out.getvalue()


def test_it_loads_runs_with_steps_and_events_and_a_trail_that_verifies():
    output = seed()

    assert Run.objects.count() == 60
    assert StepRun.objects.count() == 240  # four steps each
    assert RunEvent.objects.count() > 60 * 5
    assert AuditEvent.objects.count() == 800
    assert verify().verified_through == 800
    assert "800 audit events" in output


def test_the_trail_is_in_time_order_and_names_every_run():
    seed()

    times = list(AuditEvent.objects.order_by("seq").values_list("at", flat=True))
    assert times == sorted(times)
    started = set(
        AuditEvent.objects.filter(action="run.started").values_list("object_id", flat=True)
    )
    assert started == {str(pk) for pk in Run.objects.values_list("pk", flat=True)}


def test_each_run_has_gapless_events_and_a_consistent_status():
    seed()

    for run in Run.objects.all():
        seqs = list(run.events.order_by("seq").values_list("seq", flat=True))
        assert seqs == list(range(1, run.last_seq + 1))
        assert (run.finished_at is not None) == (
            run.status in ("succeeded", "failed", "budget_exhausted", "cancelled")
        )
        assert run.created_at < timezone.now()


def test_its_history_gives_every_metric_a_value():
    seed(runs=200)
    now = timezone.now()

    data = metrics.compute(now - timedelta(days=10), now).to_data()

    for key in ("run_success_rate", "average_replans_per_run", "cost_per_successful_run"):
        assert data[key]["value"] is not None, key
    assert data["step_latency_ms"]["p95"] >= data["step_latency_ms"]["p50"] > 0


def test_it_refuses_a_database_that_already_has_a_trail():
    seed(runs=5, audit_events=50)

    with pytest.raises(NotEmpty, match="fills an empty database, and this one has 50"):
        seed(runs=5, audit_events=50)
