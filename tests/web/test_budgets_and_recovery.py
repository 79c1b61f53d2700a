"""Budgets that hold and recovery that ends, on the web's worker: agent steps without an
estimate reserve the configured allowance; a run whose budget is exhausted leaves nothing
ready or pending and resumes only on a version a person approved; a step whose task
crashes outside the runner fails at once; retries after lost leases are bounded."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from plans import services as plan_services
from runs import execution, worker
from runs.engine import locked_run
from runs.models import Run, RunEvent, StepRun

from .runs_helpers import approved_version, drain, new_version

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def workspaces(settings, tmp_path):
    settings.FORGE_WORKSPACES = str(tmp_path / "workspaces")
    execution.agent_runner.cache_clear()
    yield tmp_path / "workspaces"
    execution.agent_runner.cache_clear()


def _agents(count: int) -> list[dict]:
    steps = [
        {"id": f"s{i:02d}", "description": f"Summarise supplier {i}'s deliveries",
         "tools_allowed": ["echo"]}
        for i in range(count)
    ]  # fmt: skip
    join = {"id": "total", "description": "Add the summaries up", "tool": "noop",
            "depends_on": [s["id"] for s in steps]}  # fmt: skip
    return [*steps, join]


def _script(tmp_path, replies: int, tokens: int) -> str:
    path = tmp_path / "replies.yaml"
    path.write_text(
        "".join(f"- {{content: '{{\"ok\": true}}', tokens: {tokens}}}\n" for _ in range(replies))
    )
    return f"scripted:{path}"


def _start(client, version) -> int:
    answer = client.post(
        "/api/v1/runs",
        {"plan_id": version.plan_id, "version": version.number},
        content_type="application/json",
    )
    assert answer.status_code == 201, answer.json()
    return int(answer.json()["id"])


def _rows(run_id: int) -> dict[str, StepRun]:
    run = Run.objects.get(pk=run_id)
    return {r.step_id: r for r in StepRun.objects.filter(run=run, plan_version=run.version.number)}


def _starts(run_id: int, step_id: str | None = None) -> int:
    events = RunEvent.objects.filter(run_id=run_id, event_type="step_started")
    return (events.filter(step_id=step_id) if step_id else events).count()


def test_an_exhausted_budget_leaves_nothing_ready_and_resumes_only_on_an_approved_version(
    author, approver, operator, api_client, settings, tmp_path
):
    settings.FORGE_MODEL = _script(tmp_path, 40, tokens=100)
    settings.FORGE_AGENT_STEP_TOKENS = 100
    version = approved_version(author, approver, _agents(20), budget={"max_tokens": 1000})
    client = api_client(operator)
    run_id = _start(client, version)
    drain()

    run = Run.objects.get(pk=run_id)
    assert (run.status, run.used_tokens) == ("budget_exhausted", 1000)
    statuses = {sid: row.status for sid, row in _rows(run_id).items()}
    assert sorted(statuses.values()).count("succeeded") == 10
    assert not {"ready", "pending", "running"} & set(statuses.values()), statuses
    assert "budget" in _rows(run_id)["total"].error

    bigger = new_version(version, author, _agents(20), budget={"max_tokens": 3000})
    refused = client.post(
        f"/api/v1/runs/{run_id}/resume", {"version": bigger.number}, content_type="application/json"
    )
    assert refused.status_code == 409  # a larger budget is drift: a person approves it
    assert refused.json()["code"] == "drift_needs_approval"
    assert Run.objects.get(pk=run_id).status == "budget_exhausted"

    plan_services.approve(bigger, approver, "the larger budget is fine")
    resumed = client.post(
        f"/api/v1/runs/{run_id}/resume", {"version": bigger.number}, content_type="application/json"
    )
    drain()

    assert resumed.status_code == 200, resumed.json()
    run = Run.objects.get(pk=run_id)
    assert (run.status, run.used_tokens, run.finished_at is not None) == ("succeeded", 2000, True)
    assert _starts(run_id) == 21  # the ten that succeeded never ran again


def test_a_step_whose_task_crashes_outside_the_runner_fails_at_once_with_the_error(
    author, approver, operator, api_client, settings, tmp_path
):
    settings.FORGE_MODEL = f"scripted:{tmp_path / 'no-such-replies.yaml'}"
    version = approved_version(author, approver, _agents(1))
    run_id = _start(api_client(operator), version)

    for _ in range(20):  # the worker loop: run what is queued, take over expired leases
        drain()
        StepRun.objects.filter(run_id=run_id, status="running").update(
            lease_expires_at=timezone.now() - timedelta(seconds=1)
        )
        worker.reap_expired_leases()

    step = _rows(run_id)["s00"]
    assert step.status == "failed"
    assert "no-such-replies.yaml" in step.error
    assert _starts(run_id, "s00") == 1
    assert Run.objects.get(pk=run_id).status == "needs_replan"


def test_retries_after_lost_leases_are_bounded_and_back_off(
    author, approver, operator, api_client, settings
):
    settings.FORGE_STEP_MAX_LEASE_RETRIES = 2
    settings.FORGE_STEP_LEASE_RETRY_BACKOFF_SECONDS = 30
    steps = [
        {"id": "read", "description": "Read the supplier list", "tool": "echo",
         "args": {"suppliers": 3}},
        {"id": "report", "description": "Write the report", "tool": "noop",
         "depends_on": ["read"]},
    ]  # fmt: skip
    version = approved_version(author, approver, steps)
    run_id = _start(api_client(operator), version)
    delays = []

    for _ in range(10):  # a step whose worker dies every time it runs it
        if _rows(run_id)["read"].status != "ready":
            break
        with locked_run(run_id) as locked:
            worker._claim(locked, "read")
        StepRun.objects.filter(run_id=run_id, step_id="read").update(
            lease_expires_at=timezone.now() - timedelta(seconds=1)
        )
        before = timezone.now()
        assert worker.reap_expired_leases() == 1
        queued = DBTaskResult.objects.filter(args_kwargs__args=[run_id, "read"])
        later = queued.filter(  # an undelayed task's run_after is a far-off sentinel
            run_after__gt=before, run_after__lt=before + timedelta(hours=1)
        ).first()
        if later is not None:
            delays.append((later.run_after - before).total_seconds())
            later.delete()

    read = _rows(run_id)["read"]
    assert _starts(run_id, "read") == 3
    assert read.status == "failed"
    assert "lost its worker 3 times" in read.error
    # 30 s doubled, each less up to a fifth at random (jitter)
    assert len(delays) == 2 and 23.9 <= delays[0] <= 30.1 and 47.9 <= delays[1] <= 60.1
    assert Run.objects.get(pk=run_id).status == "needs_replan"


def test_the_wait_before_a_step_is_started_again_is_capped(settings):
    settings.FORGE_STEP_LEASE_RETRY_BACKOFF_SECONDS = 1
    settings.FORGE_STEP_LEASE_RETRY_BACKOFF_MAX_SECONDS = 60

    assert 0.8 <= worker.lease_retry_delay(1) <= 1
    assert 48 <= worker.lease_retry_delay(7) <= 60  # 64 s, capped
    assert 48 <= worker.lease_retry_delay(5000) <= 60  # 2**4999 would overflow a float
