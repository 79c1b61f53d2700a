"""A run that needs a person says so (issue 25, item 10): after a worker died mid-step on
a step that may have had its effect, the step needs reconciling; the run waits for a
person, its ``blocked_reason`` names the step and the role that can act, and operators
find it in their inbox and on their home page until it is reconciled."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from reviews.models import Notification
from runs import services, worker
from runs.engine import locked_run
from runs.models import Run, StepRun

from .runs_helpers import approved_version, drain

pytestmark = pytest.mark.django_db(transaction=True)

STEPS = [
    {"id": "build", "description": "Build the report bundle", "tool": "shell",
     "args": {"argv": ["true"]}},
    {"id": "ship", "description": "Ship the bundle", "tool": "noop", "depends_on": ["build"]},
]  # fmt: skip
REASON = "step 'build' needs reconciling by an operator: it may have performed its side effect"


def interrupted_run(author: Any, approver: Any, operator: Any) -> Run:
    """The worker that claimed ``build`` dies; the next reaper leaves it to a person."""
    version = approved_version(author, approver, STEPS)
    run = services.start_run(version, operator)
    with locked_run(run.pk) as locked:
        worker._claim(locked, "build")
    StepRun.objects.filter(run=run, step_id="build").update(
        lease_expires_at=timezone.now() - timedelta(seconds=1)
    )
    worker.reap_expired_leases()
    drain()
    return Run.objects.get(pk=run.pk)


def sections(client: Any) -> dict[str, dict[str, Any]]:
    body = client.get("/api/v1/me/home").json()
    return {section["name"]: section for section in body["sections"]}


def test_the_run_says_which_step_needs_reconciling_and_by_whom(
    author, approver, operator, api_client
):
    run = interrupted_run(author, approver, operator)

    shown = api_client(operator).get(f"/api/v1/runs/{run.pk}").json()

    assert (shown["status"], shown["blocked_reason"]) == ("awaiting_approval", REASON)
    statuses = {step["step_id"]: step["status"] for step in shown["steps"]}
    assert statuses == {"build": "needs_reconciliation", "ship": "pending"}


def test_operators_are_told_in_their_inbox_and_nobody_else_is(
    author, approver, operator, make_user, viewer, api_client
):
    second = make_user("olga", "operator")

    run = interrupted_run(author, approver, operator)

    for person in (operator, second):
        [item] = [
            i for i in api_client(person).get("/api/v1/me/inbox").json()["items"]
            if i["kind"] == "step_needs_reconciliation"
        ]  # fmt: skip
        assert item["title"] == (
            f"Step build of run #{run.pk} (Supplier risk) needs reconciling by an operator"
        )
        assert item["url"] == f"/runs/{run.pk}/#step-build"
        assert item["comment"] == (
            "the worker's lease expired; a non-repeatable side effect may have happened"
        )
    for person in (author, approver, viewer):
        assert not Notification.objects.filter(
            recipient=person, kind="step_needs_reconciliation"
        ).exists()


def test_home_shows_operators_the_steps_to_reconcile_until_one_is_reconciled(
    author, approver, operator, api_client, session_client
):
    run = interrupted_run(author, approver, operator)

    mine = sections(api_client(operator))

    assert mine["reconcile"]["count"] == 1
    [row] = mine["reconcile"]["items"]
    assert row["url"] == f"/runs/{run.pk}/#step-build"
    assert row["step"] == "build"
    assert "reconcile" not in sections(api_client(approver))
    page = session_client(operator).get("/").content.decode()
    assert "1 item needs you" in page
    assert f"Step build of run #{run.pk}" in page

    services.reconcile_step(run, "build", True, {"exit_code": 0}, operator)
    drain()

    assert sections(api_client(operator))["reconcile"]["count"] == 0
    assert Run.objects.get(pk=run.pk).status == "succeeded"


def test_the_inbox_item_resolves_itself_once_the_step_is_reconciled(
    author, approver, operator, make_user, api_client
):
    second = make_user("olga", "operator")
    run = interrupted_run(author, approver, operator)
    assert api_client(second).get("/api/v1/me/inbox").json()["unread"] >= 1

    services.reconcile_step(run, "build", True, {"exit_code": 0}, operator)
    drain()

    [item] = [
        i for i in api_client(second).get("/api/v1/me/inbox").json()["items"]
        if i["kind"] == "step_needs_reconciliation"
    ]  # fmt: skip
    assert item["resolved"] is True
    assert item["resolution"] == f"reconciled by {operator.username}"
    unread = [
        i for i in api_client(second).get("/api/v1/me/inbox?unread=1").json()["items"]
        if i["kind"] == "step_needs_reconciliation"
    ]  # fmt: skip
    assert unread == []
