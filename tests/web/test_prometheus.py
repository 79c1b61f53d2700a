"""``/metrics/prometheus`` (issue 30, SPEC section 12): Prometheus' own parser reads it,
every figure is the database's at scrape time, seed 003's five figures are the metrics
API's, and only a bearer token of a user with ``metrics.view`` gets it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from accounts.roles import refusal
from runs import services as run_services
from runs.models import RunEvent, StepRun

from .runs_helpers import approved_version, drain

pytestmark = pytest.mark.django_db(transaction=True)

URL = "/metrics/prometheus"
STEPS = [
    {"id": "fetch", "description": "Load the orders", "tool": "echo", "args": {"orders": 48}},
    {"id": "score", "description": "Score them", "tool": "echo", "args": {"risk": 3},
     "depends_on": ["fetch"]},
]  # fmt: skip
PUBLISH = [
    {
        "id": "publish",
        "description": "Write the report",
        "tool": "file_write",
        "args": {"path": "report.md", "content": "low risk"},
    }
]


def scrape(client) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """Every sample by name, then by its labels."""
    response = client.get(URL)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=")
    samples: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            key = tuple(sorted(sample.labels.items()))
            samples.setdefault(sample.name, {})[key] = sample.value
    return samples


def test_a_scrape_needs_a_bearer_token_of_someone_who_may_read_metrics(
    anonymous_client, api_client, session_client, stranger, auditor, viewer
):
    refused = anonymous_client.get(URL)
    assert refused.status_code == 401
    assert refused["WWW-Authenticate"] == 'Bearer realm="forge"'
    assert refused.json()["code"] == "not_authenticated"
    assert (
        anonymous_client.get(URL, headers={"authorization": "Bearer forge_nope"}).status_code == 401
    )
    # A session is not a token.
    assert session_client(auditor).get(URL).status_code == 401
    forbidden = api_client(stranger).get(URL)
    assert forbidden.status_code == 403
    assert forbidden.json() == {
        "detail": refusal("metrics.view"),
        "code": "permission_denied",
    }
    assert api_client(auditor).get(URL).status_code == 200
    assert api_client(viewer).get(URL).status_code == 200


def test_runs_and_steps_by_status_and_step_durations_by_tool(
    author, approver, operator, api_client, auditor
):
    version = approved_version(author, approver, STEPS)
    run_services.start_run(version, operator)
    run_services.start_run(version, operator)
    drain()
    waiting = run_services.start_run(version, operator)  # queued, not drained

    samples = scrape(api_client(auditor))

    assert samples["forge_runs"][(("status", "succeeded"),)] == 2
    assert samples["forge_runs"][(("status", "running"),)] == 1
    assert samples["forge_runs"][(("status", "failed"),)] == 0
    assert samples["forge_steps"][(("status", "succeeded"),)] == 4
    assert samples["forge_steps"][(("status", "ready"),)] == 1
    assert samples["forge_steps"][(("status", "pending"),)] == 1
    latencies = list(
        StepRun.objects.filter(finished_at__isnull=False).values_list("latency_ms", flat=True)
    )
    echo = (("tool", "echo"),)
    assert samples["forge_step_duration_seconds_count"][echo] == 4
    assert samples["forge_step_duration_seconds_sum"][echo] == pytest.approx(sum(latencies) / 1000)
    buckets = samples["forge_step_duration_seconds_bucket"]
    assert buckets[(("le", "+Inf"), ("tool", "echo"))] == 4
    assert buckets[(("le", "0.005"), ("tool", "echo"))] == sum(v <= 5 for v in latencies)
    assert buckets[(("le", "900.0"), ("tool", "echo"))] == 4
    # The queued run's first step waits in the queue.
    task = (("task", "runs.tasks.run_step"),)
    assert samples["forge_queue_depth"][task] == 1
    assert 0 <= samples["forge_queue_oldest_age_seconds"][task] < 60
    assert waiting.pk


def test_the_five_seed_figures_are_the_metrics_apis(
    author, approver, operator, api_client, auditor
):
    version = approved_version(author, approver, STEPS)
    run_services.start_run(version, operator)
    drain()

    samples = scrape(api_client(auditor))
    api = api_client(auditor).get("/api/v1/metrics").json()

    window = (("window", "30d"),)
    assert samples["forge_run_success_rate"][window] == api["run_success_rate"]["value"] == 1.0
    assert samples["forge_replans_per_run"][window] == api["average_replans_per_run"]["value"]
    assert (
        samples["forge_cost_per_successful_run"][window]
        == (api["cost_per_successful_run"]["value"])
    )
    # Nothing to count: left out, as the API says null.
    assert api["plan_drift_rate"]["value"] is None and "forge_plan_drift_rate" not in samples
    assert api["approval_hit_rate"]["value"] is None
    assert "forge_approval_hit_rate" not in samples


def test_approval_waits_busy_slots_and_watchers(author, approver, operator, api_client, auditor):
    version = approved_version(author, approver, PUBLISH, requires_approval_before=["file_write"])
    run = run_services.start_run(version, operator)
    drain()
    asked = RunEvent.objects.get(run=run, event_type="step_awaiting_approval")
    RunEvent.objects.filter(pk=asked.pk).update(created_at=timezone.now() - timedelta(hours=2))
    busy = run_services.start_run(approved_version(author, approver, STEPS), operator)
    # As a worker's claim leaves a step: running under its lease.
    StepRun.objects.filter(run=busy, step_id="fetch").update(
        status="running", lease_owner="worker-a:41"
    )

    samples = scrape(api_client(auditor))

    assert samples["forge_approvals_waiting"][()] == 1
    assert 7200 <= samples["forge_approval_oldest_wait_seconds"][()] < 7260
    assert samples["forge_worker_slots_busy"] == {(("worker", "worker-a:41"),): 1}
    (watchers,) = samples["forge_websocket_watchers"].values()
    assert watchers == 0

    run_services.approve_step(run, "publish", approver)
    drain()
    after = scrape(api_client(auditor))
    assert after["forge_approvals_waiting"][()] == 0
    assert after["forge_approval_oldest_wait_seconds"][()] == 0
    assert after["forge_approval_hit_rate"][(("window", "30d"),)] == 1.0
    approved, rejected = (("decision", "approved"),), (("decision", "rejected"),)
    assert after["forge_approval_wait_seconds_count"] == {approved: 1, rejected: 0}
    assert 7200 <= after["forge_approval_wait_seconds_sum"][approved] < 7260
    waits = after["forge_approval_wait_seconds_bucket"]
    assert waits[(("decision", "approved"), ("le", "3600.0"))] == 0
    assert waits[(("decision", "approved"), ("le", "14400.0"))] == 1
    assert waits[(("decision", "approved"), ("le", "+Inf"))] == 1
