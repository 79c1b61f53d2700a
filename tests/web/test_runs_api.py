"""Runs through the API and a real worker loop: start, approval gates, replans, drift,
cancel, and recovery from a worker that died."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from audit.models import AuditEvent
from plans import services as plan_services
from runs import worker
from runs.engine import locked_run
from runs.models import ExecutionRecord, Run, RunEvent, StepRun

from .runs_helpers import approved_version, drain, new_version

pytestmark = pytest.mark.django_db(transaction=True)

STEPS = [
    {
        "id": "inspect",
        "description": "Collect contract facts",
        "tool": "echo",
        "args": {"facts": ["a", "b"]},
        "done_when": {"required_keys": ["facts"], "checks": ["length(facts) > `0`"]},
    },
    {
        "id": "score",
        "description": "Score the supplier risk",
        "tool": "echo",
        "args": {"risk": 3},
        "depends_on": ["inspect"],
        "done_when": {"checks": ["risk <= `5`"]},
    },
    {
        "id": "publish",
        "description": "Write the risk report",
        "tool": "file_write",
        "args": {"path": "report.md", "content": "low risk"},
        "depends_on": ["score"],
    },
]


@pytest.fixture(autouse=True)
def workspaces(settings, tmp_path):
    settings.FORGE_WORKSPACES = str(tmp_path / "workspaces")
    return tmp_path / "workspaces"


def _start(client, version):
    return client.post(
        "/api/v1/runs",
        {"plan_id": version.plan_id, "version": version.number},
        content_type="application/json",
    )


def _statuses(run_id):
    run = Run.objects.get(pk=run_id)
    rows = StepRun.objects.filter(run=run, plan_version=run.version.number)
    return {row.step_id: row.status for row in rows}


def test_an_operator_starts_an_approved_version_and_a_worker_runs_it_to_success(
    author, approver, operator, api_client, workspaces
):
    version = approved_version(author, approver, STEPS)
    client = api_client(operator)

    started = _start(client, version)

    assert started.status_code == 201, started.json()
    body = started.json()
    assert body["status"] == "running"
    assert [(s["step_id"], s["status"]) for s in body["steps"]] == [
        ("inspect", "ready"),
        ("score", "pending"),
        ("publish", "pending"),
    ]
    drain()
    run = client.get(f"/api/v1/runs/{body['id']}").json()
    assert run["status"] == "succeeded"
    assert run["budget"]["used_steps"] == 3
    assert [s["status"] for s in run["steps"]] == ["succeeded"] * 3
    assert run["steps"][0]["output"] == {"facts": ["a", "b"]}
    assert (workspaces / f"run-{body['id']}" / "report.md").read_text() == "low risk"
    seqs = list(RunEvent.objects.filter(run_id=body["id"]).values_list("seq", flat=True))
    assert seqs == list(range(1, len(seqs) + 1))


def test_a_long_plan_gets_one_row_per_step_in_order_and_compiles_once_to_start(
    author, approver, operator, api_client, monkeypatch
):
    """Step rows are written a slice at a time (runs.engine): a 1,201-step chain crosses
    slices and keeps every position; starting compiles the version once, not again for
    its scheduler."""
    from plans import compilation
    from runs import engine

    steps = [
        {"id": f"s{n}", "description": f"Step {n}", "tool": "noop"}
        | ({"depends_on": [f"s{n - 1}"]} if n else {})
        for n in range(1201)
    ]
    version = approved_version(author, approver, steps)
    compiled = []
    real = compilation.compile_version
    for module in (compilation, engine):
        monkeypatch.setattr(
            module, "compile_version", lambda *a, **k: compiled.append(1) or real(*a, **k)
        )

    started = _start(api_client(operator), version)

    assert started.status_code == 201, started.json()
    assert len(compiled) == 1
    rows = StepRun.objects.filter(run_id=started.json()["id"]).order_by("position")
    assert list(rows.values_list("step_id", "position")) == [(f"s{n}", n) for n in range(1201)]


def test_the_events_endpoint_returns_events_after_a_seq_in_order(
    author, approver, operator, api_client
):
    version = approved_version(author, approver, STEPS)
    client = api_client(operator)
    run_id = _start(client, version).json()["id"]
    drain()

    everything = client.get(f"/api/v1/runs/{run_id}/events").json()
    later = client.get(f"/api/v1/runs/{run_id}/events?after=3").json()

    assert everything[0]["event_type"] == "run_started"
    assert everything[-1]["event_type"] == "run_succeeded"
    assert [e["seq"] for e in later] == [e["seq"] for e in everything[3:]]
    assert {
        "run_id",
        "plan_id",
        "plan_version",
        "step_id",
        "transition",
        "step_status",
        "tool_name",
        "tool_args_hash",
        "permission_scope",
        "side_effect",
        "latency_ms",
        "tokens",
        "cost",
        "verdict",
        "actor",
        "created_at",
    } <= set(later[0])


def test_only_an_approved_version_can_be_run(author, operator, api_client):
    from forge.plan import from_data
    from plans import services

    version = services.create_plan(author, "Draft", from_data({"goal": "g", "steps": STEPS}))

    answer = _start(api_client(operator), version)

    assert answer.status_code == 409
    assert answer.json()["code"] == "not_approved"
    assert not Run.objects.exists()


def test_a_viewer_cannot_start_a_run(author, approver, viewer, api_client):
    version = approved_version(author, approver, STEPS)

    assert _start(api_client(viewer), version).status_code == 403


def test_a_step_needing_approval_waits_and_runs_once_another_person_approves_it(
    author, approver, operator, api_client, workspaces
):
    version = approved_version(author, approver, STEPS, requires_approval_before=["file_write"])
    run_id = _start(api_client(operator), version).json()["id"]
    drain()
    assert Run.objects.get(pk=run_id).status == "awaiting_approval"
    assert _statuses(run_id)["publish"] == "awaiting_approval"

    by_author = api_client(author).post(
        f"/api/v1/runs/{run_id}/steps/publish/approve",
        {"comment": "mine"},
        content_type="application/json",
    )
    by_approver = api_client(approver).post(
        f"/api/v1/runs/{run_id}/steps/publish/approve",
        {"comment": "ok to write"},
        content_type="application/json",
    )
    drain()

    assert by_author.status_code == 403
    assert by_approver.status_code == 200, by_approver.json()
    assert Run.objects.get(pk=run_id).status == "succeeded"
    step = StepRun.objects.get(run_id=run_id, step_id="publish")
    assert step.approved_by == approver.username
    assert (workspaces / f"run-{run_id}" / "report.md").exists()


def test_a_check_that_cannot_be_evaluated_on_the_worker_makes_the_step_invalid(
    author, approver, operator, api_client
):
    steps = [
        {
            "id": "inspect",
            "description": "Read the supplier's name",
            "tool": "echo",
            "args": {"name": "Initech"},
            "done_when": {"checks": ["contains(supplier, 'ACME')"]},
        }
    ]
    version = approved_version(author, approver, steps)
    client = api_client(operator)
    run_id = _start(client, version).json()["id"]
    drain()

    run = client.get(f"/api/v1/runs/{run_id}").json()
    assert run["status"] == "needs_replan"
    (step,) = run["steps"]
    assert step["status"] == "invalid"
    (error,) = step["verdict"]["errors"]
    assert "contains(supplier, 'ACME') with supplier = null: cannot be evaluated" in error


def test_a_failed_contract_needs_a_replan_and_resuming_never_reruns_preserved_steps(
    author, approver, operator, api_client
):
    failing = [dict(STEPS[0]), {**STEPS[1], "args": {"risk": 9}}, STEPS[2]]
    version = approved_version(author, approver, failing)
    client = api_client(operator)
    run_id = _start(client, version).json()["id"]
    drain()
    run = client.get(f"/api/v1/runs/{run_id}").json()
    assert run["status"] == "needs_replan"
    assert (run["failed_step"], run["reset"], run["preserved"]) == (
        "score",
        ["publish", "score"],
        ["inspect"],
    )

    fixed = new_version(version, author, STEPS)
    plan_services.approve(fixed, approver, "the fix looks right")
    resumed = client.post(
        f"/api/v1/runs/{run_id}/resume", {"version": fixed.number}, content_type="application/json"
    )
    drain()

    assert resumed.status_code == 200, resumed.json()
    assert Run.objects.get(pk=run_id).status == "succeeded"
    executed = list(
        ExecutionRecord.objects.filter(run_id=run_id)
        .order_by("started_at")
        .values_list("step_id", flat=True)
    )
    assert executed == ["inspect", "score", "score", "publish"]


def test_a_replan_that_drops_a_constraint_needs_approval_before_the_run_resumes(
    author, approver, operator, api_client
):
    failing = [dict(STEPS[0]), {**STEPS[1], "args": {"risk": 9}}, STEPS[2]]
    version = approved_version(author, approver, failing, requires_approval_before=["file_write"])
    client = api_client(operator)
    run_id = _start(client, version).json()["id"]
    drain()
    drifted = new_version(version, author, STEPS)  # drops requires_approval_before

    refused = client.post(
        f"/api/v1/runs/{run_id}/resume",
        {"version": drifted.number},
        content_type="application/json",
    )

    assert refused.status_code == 409
    assert refused.json()["code"] == "drift_needs_approval"
    assert "approval before 'file_write' is no longer required" in refused.json()["detail"]
    assert Run.objects.get(pk=run_id).version_id == version.pk  # stays on the approved one

    plan_services.approve(drifted, approver, "fine without the gate")
    drifted.refresh_from_db()
    accepted = client.post(
        f"/api/v1/runs/{run_id}/resume",
        {"version": drifted.number},
        content_type="application/json",
    )
    assert accepted.status_code == 200


def test_cancel_stops_admission_and_cancels_what_has_not_started(
    author, approver, operator, api_client
):
    version = approved_version(author, approver, STEPS)
    client = api_client(operator)
    run_id = _start(client, version).json()["id"]

    answer = client.post(f"/api/v1/runs/{run_id}/cancel")
    drain()

    assert answer.status_code == 200
    assert answer.json()["status"] == "cancelled"
    assert set(_statuses(run_id).values()) == {"cancelled"}
    assert not ExecutionRecord.objects.filter(run_id=run_id).exists()
    assert client.post(f"/api/v1/runs/{run_id}/cancel").status_code == 409


def _claim_and_lose(run_id, step_id):
    """A worker claims the step and dies: its lease runs out without a result."""
    with locked_run(run_id) as locked:
        claim = worker._claim(locked, step_id)
    StepRun.objects.filter(run_id=run_id, step_id=step_id).update(
        lease_expires_at=timezone.now() - timedelta(seconds=1)
    )
    return claim


def test_a_step_whose_worker_died_is_retried_when_it_is_idempotent(
    author, approver, operator, api_client
):
    version = approved_version(author, approver, STEPS)
    run_id = _start(api_client(operator), version).json()["id"]
    claim = _claim_and_lose(run_id, "inspect")

    assert worker.reap_expired_leases() == 1
    drain()

    assert Run.objects.get(pk=run_id).status == "succeeded"
    assert StepRun.objects.get(run_id=run_id, step_id="inspect").attempt == 2
    from forge.runtime import ToolResult

    assert worker.finish(claim, ToolResult("succeeded", output={"facts": [1]})) is None


def test_a_non_idempotent_step_whose_worker_died_waits_for_a_person_to_reconcile_it(
    author, approver, operator, api_client
):
    steps = [
        {
            "id": "build",
            "description": "Build the report bundle",
            "tool": "shell",
            "args": {"argv": ["true"]},
        },
        {"id": "ship", "description": "Ship the bundle", "tool": "noop", "depends_on": ["build"]},
    ]
    version = approved_version(author, approver, steps)
    client = api_client(operator)
    run_id = _start(client, version).json()["id"]
    _claim_and_lose(run_id, "build")

    worker.reap_expired_leases()
    drain()

    assert _statuses(run_id) == {"build": "needs_reconciliation", "ship": "pending"}
    answer = client.post(
        f"/api/v1/runs/{run_id}/steps/build/reconcile",
        {"status": "succeeded", "output": {"exit_code": 0}, "comment": "the bundle is there"},
        content_type="application/json",
    )
    drain()
    assert answer.status_code == 200, answer.json()
    assert Run.objects.get(pk=run_id).status == "succeeded"
    assert not ExecutionRecord.objects.filter(run_id=run_id, step_id="build").exists()
    # The operator's word on what happened is kept with the decision.
    assert AuditEvent.objects.get(action="run.step_reconciled").payload == {
        "step": "build", "status": "succeeded", "comment": "the bundle is there"
    }  # fmt: skip


def test_a_worker_runs_an_agent_step_with_the_configured_model_through_the_executor(
    author, approver, operator, api_client, settings, tmp_path
):
    from runs import execution

    script = tmp_path / "replies.yaml"
    script.write_text(
        "- tool_calls: [{name: echo, arguments: {facts: [late deliveries]}}]\n"
        "  tokens: 120\n"
        '- content: \'{"summary": "ACME delivers late", "facts": 1}\'\n'
        "  tokens: 80\n"
    )
    settings.FORGE_MODEL = f"scripted:{script}"
    execution.agent_runner.cache_clear()
    steps = [
        {
            "id": "study",
            "description": "Summarise the supplier's delivery record",
            "tools_allowed": ["echo"],
            "done_when": {"required_keys": ["summary"]},
        },
    ]
    version = approved_version(author, approver, steps)
    try:
        run_id = _start(api_client(operator), version).json()["id"]
        drain()
    finally:
        execution.agent_runner.cache_clear()

    run = Run.objects.get(pk=run_id)
    step = StepRun.objects.get(run=run, step_id="study")
    assert (run.status, step.output, step.tokens) == (
        "succeeded",
        {"summary": "ACME delivers late", "facts": 1},
        200,
    )
    assert list(ExecutionRecord.objects.filter(run=run).values_list("tool", flat=True)) == ["echo"]


def test_the_run_list_is_paginated_newest_first_and_filters_by_status(
    author, approver, operator, api_client
):
    version = approved_version(author, approver, STEPS)
    client = api_client(operator)
    first = _start(client, version).json()["id"]
    second = _start(client, version).json()["id"]
    client.post(f"/api/v1/runs/{second}/cancel")

    everything = client.get("/api/v1/runs").json()
    cancelled = client.get("/api/v1/runs?status=cancelled").json()

    assert everything["count"] == 2
    assert [run["id"] for run in everything["items"]] == [second, first]
    assert everything["items"][0] == {
        "id": second,
        "plan_id": version.plan_id,
        "plan_name": "Supplier risk",
        "version": 1,
        "status": "cancelled",
        "started_by": operator.username,
        "created_at": everything["items"][0]["created_at"],
        "finished_at": everything["items"][0]["finished_at"],
        "replans": 0,
        "last_seq": Run.objects.get(pk=second).last_seq,
    }
    assert [run["id"] for run in cancelled["items"]] == [second]


def test_the_run_list_refuses_a_status_that_no_run_can_have(operator, api_client):
    answer = api_client(operator).get("/api/v1/runs?status=finished")

    assert answer.status_code == 422, answer.content
    assert answer.json()["code"] == "validation_error"
    assert "needs_replan" in str(answer.json()["errors"])  # it names the statuses there are
