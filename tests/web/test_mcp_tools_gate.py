"""The four-eyes rule for MCP steps (tests/web/test_gate.py's matrix, with a real MCP
server behind the steps): an MCP step of a version that is unapproved, self-approved,
approved with a forged signature or changed after its approval never reaches the server,
whichever path asks (starting a run, a worker picking the step up), and a destructive
step's own approval is never its author's. The ledger server logs every call it gets."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from forge.plan import content_hash, from_data
from plans import compilation
from plans import services as plan_services
from plans.gate import gate
from plans.models import Approval, PlanVersion
from runs import engine
from runs import services as run_services
from runs.models import Run

from .mcp_servers import DROP, LOOK, deploy_ledger
from .runs_helpers import drain

pytestmark = pytest.mark.django_db(transaction=True)

STEPS = [LOOK, {**DROP, "args": {"key": "fees"}}]


@pytest.fixture
def ledger(settings, tmp_path):
    yield from deploy_ledger(settings, tmp_path)


def _version(author: Any) -> PlanVersion:
    data = {"goal": "Close the fees account in the ledger", "steps": copy.deepcopy(STEPS)}
    return plan_services.create_plan(author, "Ledger", from_data(data))


def unapproved(author: Any, approver: Any, make_user: Any) -> PlanVersion:
    return _version(author)


def self_approved(author: Any, approver: Any, make_user: Any) -> PlanVersion:
    # Ada writes and approves her own version, by rows written around the services (they
    # refuse it), even signed with the deployment's key.
    ada = make_user("ada", "author", "approver", "operator")
    version = _version(ada)
    digest = content_hash(compilation.stored_document(version))
    signed = gate()._signed(str(version.plan_id), version.number, digest, "ada", "ada",
                            by_policy=False)  # fmt: skip
    Approval.objects.create(version=version, reviewer=ada, decision="approved",
                            content_hash=digest, signature=signed.signature)  # fmt: skip
    PlanVersion.objects.filter(pk=version.pk).update(status="approved")
    return PlanVersion.objects.get(pk=version.pk)


def forged(author: Any, approver: Any, make_user: Any) -> PlanVersion:
    version = _version(author)
    Approval.objects.create(version=version, reviewer=approver, decision="approved",
                            content_hash=version.content_hash, signature="0" * 64)  # fmt: skip
    PlanVersion.objects.filter(pk=version.pk).update(status="approved")
    return PlanVersion.objects.get(pk=version.pk)


def tampered(author: Any, approver: Any, make_user: Any) -> PlanVersion:
    version = _version(author)
    plan_services.approve(version, approver, "looks right")
    changed = copy.deepcopy(version.document)
    changed["steps"][0] = {**changed["steps"][0], "tool": "ledger.delete_entry",
                           "args": {"key": "rent"}}  # fmt: skip
    PlanVersion.objects.filter(pk=version.pk).update(document=changed)
    return PlanVersion.objects.get(pk=version.pk)


UNFIT: list[tuple[Callable[..., PlanVersion], str]] = [
    (unapproved, "not_approved"),
    (self_approved, "self_approval"),
    (forged, "approval_invalid"),
    (tampered, "content_changed"),
]
IDS = ["unapproved", "self-approved", "forged approval", "hash mismatch"]


@pytest.mark.parametrize(("make", "code"), UNFIT, ids=IDS)
def test_starting_an_unfit_version_is_refused_and_no_mcp_call_is_made(
    ledger, make, code, author, approver, operator, make_user, api_client
):
    version = make(author, approver, make_user)

    answer = api_client(operator).post(
        "/api/v1/runs", {"plan_id": version.plan_id, "version": 1}, content_type="application/json"
    )
    drain()

    assert answer.status_code == 409, answer.json()
    assert answer.json()["code"] == code
    assert not Run.objects.exists()
    assert ledger.calls() == []
    assert ledger.entries() == {"rent": 900, "fees": 40}


def test_a_worker_never_calls_the_server_for_a_document_changed_after_the_run_started(
    ledger, author, approver, operator
):
    version = _version(author)
    plan_services.approve(version, approver, "looks right")
    run_services.start_run(PlanVersion.objects.get(pk=version.pk), operator)
    changed = copy.deepcopy(version.document)
    changed["steps"][0]["tool"] = "ledger.record_entry"
    changed["steps"][0]["args"] = {"key": "bonus", "amount": 10_000}
    PlanVersion.objects.filter(pk=version.pk).update(document=changed)
    # A worker process that has not compiled this version yet reads it as it is now.
    engine._SCHEDULERS.clear()
    engine._GRAPHS.clear()

    drain()

    run = Run.objects.get()
    assert run.status == "failed"
    assert "content_changed" in run.blocked_reason
    assert ledger.calls() == []


def test_the_author_cannot_approve_the_destructive_step_of_their_own_version(
    ledger, author, approver, operator, make_user, api_client
):
    # Ada may approve steps, but not those of a version she wrote.
    ada = make_user("ada", "author", "approver", "operator")
    version = _version(ada)
    plan_services.approve(version, approver, "looks right")
    run = run_services.start_run(PlanVersion.objects.get(pk=version.pk), operator)
    drain()

    answer = api_client(ada).post(
        f"/api/v1/runs/{run.pk}/steps/drop/approve", {}, content_type="application/json"
    )
    drain()

    assert answer.status_code == 403
    assert Run.objects.get().status == "awaiting_approval"
    assert ledger.calls() == [{"tool": "list_entries", "args": {}}]
    assert ledger.entries() == {"rent": 900, "fees": 40}
