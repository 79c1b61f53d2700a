"""Re-running a run from chosen steps (issue 25, item 11): ``POST /runs/{id}/rerun
{"steps": [...]}`` starts a new run of the same approved version that keeps the
recorded outputs of every step not downstream of the chosen ones (no side effect
repeated: the ledger server of tests/fixtures counts the calls that reach it) and runs
the chosen steps and their descendants; steps among them that need approval wait again.
The new run links to the old one and back; the gate, the permissions and bad input are
checked as for a start."""

from __future__ import annotations

from typing import Any

import pytest

from audit.models import AuditEvent
from plans import services as plan_services
from plans.models import PlanVersion
from runs import services
from runs.models import ExecutionRecord, Run, StepRun

from .mcp_servers import DROP, LOOK, approved, deploy_ledger
from .runs_helpers import approved_version, drain

pytestmark = pytest.mark.django_db(transaction=True)

STEPS = [
    {"id": "fetch", "description": "Load the supplier's orders", "tool": "echo",
     "args": {"orders": 48}},
    {"id": "save", "description": "Keep the orders in the workspace", "tool": "file_write",
     "args": {"path": "orders.txt", "content": "48 orders"}, "depends_on": ["fetch"]},
    {"id": "read", "description": "Read the kept orders back", "tool": "file_read",
     "args": {"path": "orders.txt"}, "depends_on": ["save"]},
    {"id": "score", "description": "Score the delivery risk", "tool": "echo",
     "args": {"risk": 3}, "depends_on": ["read"]},
]  # fmt: skip


def post(client: Any, path: str, body: dict[str, Any] | None = None) -> Any:
    return client.post(f"/api/v1{path}", body or {}, content_type="application/json")


def finished_run(author: Any, approver: Any, operator: Any, steps: Any = STEPS) -> Run:
    version = approved_version(author, approver, steps)
    run = services.start_run(version, operator)
    drain()
    run.refresh_from_db()
    assert run.status == "succeeded", run.blocked_reason
    return run


def steps_of(run_id: int) -> dict[str, StepRun]:
    run = Run.objects.get(pk=run_id)
    return {row.step_id: row for row in StepRun.objects.filter(run=run, plan_version=1)}


def test_an_operator_reruns_a_run_from_a_step_and_keeps_what_is_upstream(
    author, approver, operator, api_client
):
    old = finished_run(author, approver, operator)
    client = api_client(operator)

    answer = post(client, f"/runs/{old.pk}/rerun", {"steps": ["read"]})

    assert answer.status_code == 201, answer.json()
    body = answer.json()
    new_id = body["id"]
    assert (body["rerun_of"], body["rerun_steps"], body["version"]) == (old.pk, ["read"], 1)
    statuses = {step["step_id"]: step["status"] for step in body["steps"]}
    assert statuses == {"fetch": "succeeded", "save": "succeeded", "read": "ready",
                        "score": "pending"}  # fmt: skip
    drain()
    new = steps_of(new_id)
    assert Run.objects.get(pk=new_id).status == "succeeded"
    assert new["fetch"].output == steps_of(old.pk)["fetch"].output
    assert (new["fetch"].attempt, new["save"].attempt, new["read"].attempt) == (0, 0, 1)
    # The file "save" wrote in the first run is in the new run's workspace: read found it.
    assert new["read"].output["content"] == "48 orders"
    executed = set(ExecutionRecord.objects.filter(run_id=new_id).values_list("step_id", flat=True))
    assert executed == {"read", "score"}
    assert client.get(f"/api/v1/runs/{old.pk}").json()["reruns"] == [new_id]
    audit = AuditEvent.objects.get(action="run.rerun")
    assert (audit.actor, audit.object_id) == ("operator", str(new_id))
    assert audit.payload["of"] == old.pk
    assert audit.payload["steps"] == ["read", "score"]
    assert audit.payload["preserved"] == ["fetch", "save"]


def test_the_dialog_asks_what_a_rerun_would_keep_and_what_waits_for_approval(
    author, approver, operator, api_client, settings
):
    settings.FORGE_HTTP_ALLOWED_HOSTS = ["example.com"]  # else the plan does not compile
    send = {"id": "send", "description": "Post the score to the board",
            "tool": "http_request", "depends_on": ["read"],
            "args": {"method": "POST", "url": "https://example.com/board"}}  # fmt: skip
    steps = [*STEPS[:3], send]
    version = approved_version(author, approver, steps)
    old = services.start_run(version, operator)
    drain()
    services.cancel_run(old, operator)  # "send" waits for approval; nobody gives it

    answer = api_client(operator).get(f"/api/v1/runs/{old.pk}/rerun?steps=save")

    assert answer.status_code == 200, answer.json()
    assert answer.json() == {
        "chosen": ["save"],
        "steps": ["save", "read", "send"],
        "preserved": ["fetch"],
        "unfinished": [],
        "needs_approval": [{"step": "send", "reasons": [
            "external side effects always need a person's approval"]}],
    }  # fmt: skip


def test_steps_that_did_not_succeed_are_run_again_too_and_the_answer_says_so(
    author, approver, operator, api_client
):
    failing = [*STEPS[:3], {**STEPS[3], "done_when": {"checks": ["risk <= `2`"]}}]
    version = approved_version(author, approver, failing)
    old = services.start_run(version, operator)
    drain()
    old.refresh_from_db()
    assert old.status == "needs_replan"

    plan = api_client(operator).get(f"/api/v1/runs/{old.pk}/rerun?steps=save").json()

    assert plan["steps"] == ["save", "read", "score"]
    plan = api_client(operator).get(f"/api/v1/runs/{old.pk}/rerun?steps=fetch").json()
    assert plan["preserved"] == [] and plan["steps"] == ["fetch", "save", "read", "score"]


@pytest.fixture
def ledger(settings, tmp_path):
    yield from deploy_ledger(settings, tmp_path)


def test_a_side_effect_is_never_repeated_and_one_rerun_waits_for_approval_again(
    ledger, author, approver, operator, api_client
):
    record = {"id": "add", "description": "Record the tax in the ledger",
              "tool": "ledger.record_entry", "args": {"key": "tax", "amount": 12},
              "depends_on": ["look"]}  # fmt: skip
    version = approved(author, approver, [LOOK, record, {**DROP, "depends_on": ["add"]}])
    old = services.start_run(version, operator)
    drain()
    services.approve_step(old, "drop", approver, "rent is settled")
    drain()
    old.refresh_from_db()
    assert old.status == "succeeded", old.blocked_reason
    assert [call["tool"] for call in ledger.calls()] == [
        "list_entries", "record_entry", "delete_entry",
    ]  # fmt: skip

    answer = post(api_client(operator), f"/runs/{old.pk}/rerun", {"steps": ["drop"]})

    assert answer.status_code == 201, answer.json()
    new = Run.objects.get(pk=answer.json()["id"])
    drain()
    new.refresh_from_db()
    assert new.status == "awaiting_approval"
    assert new.blocked_reason == (
        "step 'drop' waits for approval by an approver who did not write this version"
    )
    assert len(ledger.calls()) == 3  # nothing ran: the record was kept, not repeated
    services.approve_step(new, "drop", approver, "again")
    drain()
    new.refresh_from_db()
    assert new.status == "succeeded", new.blocked_reason
    assert [call["tool"] for call in ledger.calls()] == [
        "list_entries", "record_entry", "delete_entry", "delete_entry",
    ]  # fmt: skip


def test_a_version_no_longer_approved_or_changed_since_is_not_rerun(
    author, approver, operator, api_client
):
    old = finished_run(author, approver, operator)
    client = api_client(operator)
    version = PlanVersion.objects.get(pk=old.version_id)
    plan_services.reject(version, approver, "we stop this supplier")

    rejected = post(client, f"/runs/{old.pk}/rerun", {"steps": ["read"]})

    assert rejected.status_code == 409
    assert rejected.json()["code"] == "not_approved"

    other = finished_run(author, approver, operator)
    PlanVersion.objects.filter(pk=other.version_id).update(
        document={**other.version.document, "goal": "Something else entirely now"}
    )
    changed = post(client, f"/runs/{other.pk}/rerun", {"steps": ["read"]})
    assert changed.status_code == 409
    assert changed.json()["code"] == "content_changed"
    assert Run.objects.count() == 2


def test_bad_steps_are_refused_with_a_clear_code(author, approver, operator, api_client):
    old = finished_run(author, approver, operator)
    client = api_client(operator)

    unknown = post(client, f"/runs/{old.pk}/rerun", {"steps": ["read", "nope"]})
    empty = post(client, f"/runs/{old.pk}/rerun", {"steps": []})
    malformed = post(client, f"/runs/{old.pk}/rerun", {"steps": ["no spaces"]})
    preview = client.get(f"/api/v1/runs/{old.pk}/rerun?steps=nope")

    assert (unknown.status_code, unknown.json()["code"]) == (400, "unknown_step")
    assert "'nope'" in unknown.json()["detail"]
    assert unknown.json()["steps"] == ["nope"]
    assert (empty.status_code, empty.json()["code"]) == (422, "validation_error")
    assert (malformed.status_code, malformed.json()["code"]) == (422, "validation_error")
    assert (preview.status_code, preview.json()["code"]) == (400, "unknown_step")
    assert Run.objects.count() == 1


def test_a_run_still_going_is_not_rerun(author, approver, operator, api_client):
    version = approved_version(author, approver, STEPS)
    old = services.start_run(version, operator)  # not drained: "fetch" is ready

    answer = post(api_client(operator), f"/runs/{old.pk}/rerun", {"steps": ["read"]})

    assert (answer.status_code, answer.json()["code"]) == (409, "run_in_progress")


def test_only_people_who_may_start_runs_rerun_them(author, approver, operator, viewer, api_client):
    old = finished_run(author, approver, operator)

    for person in (viewer, author, approver):
        answer = post(api_client(person), f"/runs/{old.pk}/rerun", {"steps": ["read"]})
        assert answer.status_code == 403, person
    assert Run.objects.count() == 1
    missing = post(api_client(operator), "/runs/999999/rerun", {"steps": ["read"]})
    assert missing.status_code == 404


def test_the_pages_of_a_run_and_its_rerun_link_to_each_other(
    author, approver, operator, api_client, client
):
    old = finished_run(author, approver, operator)
    new_id = post(api_client(operator), f"/runs/{old.pk}/rerun", {"steps": ["read", "save"]})
    new_id = new_id.json()["id"]
    client.force_login(operator)

    new_page = client.get(f"/runs/{new_id}/").content.decode()
    old_page = client.get(f"/runs/{old.pk}/").content.decode()

    assert f'Re-run of <a href="/runs/{old.pk}/">#{old.pk}</a> from save, read.' in new_page
    assert f'Re-run as <a href="/runs/{new_id}/">#{new_id}</a>.' in old_page
    assert 'id="rerun-dialog"' in old_page  # an operator may start one from here


def test_the_plan_of_a_rerun_takes_several_steps(author, approver, operator, api_client):
    old = finished_run(author, approver, operator)

    plan = api_client(operator).get(f"/api/v1/runs/{old.pk}/rerun?steps=score&steps=save")

    assert plan.status_code == 200, plan.json()
    assert (plan.json()["chosen"], plan.json()["preserved"]) == (["save", "score"], ["fetch"])
