"""Free text people type (approval comments, version notes, replan reasons, step approval
comments) is redacted before it is stored, so the audit trail and its exports never hold
the secrets in it (issue "Trust", problem 14)."""

from __future__ import annotations

import json

import pytest

from audit.models import AuditEvent
from forge.plan import from_data
from plans import services as plan_services
from plans.models import Approval, PlanVersion
from runs import services as run_services
from runs.models import RunEvent, StepApproval

from .runs_helpers import approved_version, drain

GITHUB_TOKEN = "ghp_" + "Zx9Yw8Vu7Ts6Rq5Po4Nm" * 2
SECRET_TEXT = f"pushed with {GITHUB_TOKEN}, db password=hunter2"
REDACTED_TEXT = "pushed with [redacted], db password=[redacted]"


def _exported(api_client, user):
    response = api_client(user).get("/api/v1/audit/export?format=jsonl")
    return b"".join(response.streaming_content).decode()


@pytest.mark.django_db
def test_an_approval_comment_is_stored_audited_and_exported_without_its_secrets(
    make_plan, author, approver, viewer, api_client
):
    version = make_plan(author)

    approval = plan_services.approve(version, approver, SECRET_TEXT)

    assert Approval.objects.get(pk=approval.pk).comment == REDACTED_TEXT
    event = AuditEvent.objects.get(action="plan_version.approved")
    assert event.payload["comment"] == REDACTED_TEXT
    exported = _exported(api_client, viewer)
    assert "hunter2" not in exported and GITHUB_TOKEN not in exported
    assert json.dumps(REDACTED_TEXT) in exported


@pytest.mark.django_db
def test_a_version_note_and_replan_reason_are_stored_and_audited_without_secrets(
    make_plan, plan_document, author
):
    first = make_plan(author)

    version = plan_services.create_version(
        first.plan,
        author,
        from_data(plan_document()),
        note=SECRET_TEXT,
        replan_reason="step failed: Authorization: Basic QWxhZGRpbjpvcGVu",
    )

    stored = PlanVersion.objects.get(pk=version.pk)
    assert (stored.note, stored.replan_reason) == (
        REDACTED_TEXT,
        "step failed: Authorization: [redacted]",
    )
    payload = AuditEvent.objects.filter(action="plan_version.created").last().payload
    assert (payload["note"], payload["replan_reason"]) == (
        REDACTED_TEXT,
        "step failed: Authorization: [redacted]",
    )


STEPS = [
    {
        "id": "publish",
        "description": "Write the report",
        "tool": "file_write",
        "args": {"path": "report.md", "content": "low risk"},
    }
]


@pytest.fixture
def waiting_run(settings, tmp_path, author, approver, operator):
    settings.FORGE_WORKSPACES = str(tmp_path / "workspaces")
    version = approved_version(author, approver, STEPS, requires_approval_before=["file_write"])
    run = run_services.start_run(version, operator)
    drain()
    run.refresh_from_db()
    assert run.status == "awaiting_approval"
    return run


@pytest.mark.django_db(transaction=True)
def test_a_step_approval_comment_is_stored_and_audited_without_secrets(waiting_run, approver):
    run_services.approve_step(waiting_run, "publish", approver, SECRET_TEXT)

    assert StepApproval.objects.get(run=waiting_run).comment == REDACTED_TEXT
    event = AuditEvent.objects.get(action="run.step_approved")
    assert event.payload["comment"] == REDACTED_TEXT


@pytest.mark.django_db(transaction=True)
def test_a_step_rejection_comment_reaches_no_store_with_its_secrets(waiting_run, approver):
    run_services.reject_step(waiting_run, "publish", approver, SECRET_TEXT)

    assert StepApproval.objects.get(run=waiting_run).comment == REDACTED_TEXT
    assert AuditEvent.objects.get(action="run.step_rejected").payload["comment"] == REDACTED_TEXT
    reasons = list(
        RunEvent.objects.filter(run=waiting_run, event_type="step_rejected").values_list(
            "blocked_reason", flat=True
        )
    )
    assert reasons == [f"rejected by approver: {REDACTED_TEXT}"]
