"""The run pages (runs.views): who sees what, the start form, the status filter, and the
live page's initial data (a snapshot whose last_seq matches its steps)."""

from __future__ import annotations

import json
import re

import pytest

from plans import services as plan_services
from plans.compilation import stored_document
from runs import services
from runs.models import Run

from .runs_helpers import approved_version, drain

pytestmark = pytest.mark.django_db(transaction=True)

STEPS = [
    {"id": "inspect", "description": "Collect contract facts", "tool": "echo", "args": {"n": 1}},
    {
        "id": "publish",
        "description": "Write the report <img src=x onerror=alert(1)>",
        "tool": "file_write",
        "args": {"path": "report.md", "content": "<script>alert(1)</script>"},
        "depends_on": ["inspect"],
    },
]


@pytest.fixture(autouse=True)
def workspaces(settings, tmp_path):
    settings.FORGE_WORKSPACES = str(tmp_path / "workspaces")


def _page_data(response, element_id="run-data"):
    match = re.search(
        rf'<script id="{element_id}" type="application/json">(.*?)</script>',
        response.content.decode(),
        re.DOTALL,
    )
    assert match, f"no #{element_id} on the page"
    return json.loads(match.group(1))


def test_a_viewer_sees_the_run_list_without_the_start_form(
    viewer, author, approver, operator, client
):
    version = approved_version(author, approver, STEPS)
    services.start_run(version, operator)
    client.force_login(viewer)

    response = client.get("/runs/")

    assert response.status_code == 200
    assert b'id="start-run"' not in response.content
    assert b"Supplier risk" in response.content
    assert b'data-status="running"' in response.content


def test_an_operator_is_offered_only_approved_versions_to_start(author, approver, operator, client):
    version = approved_version(author, approver, STEPS)
    draft = plan_services.create_version(
        version.plan, author, stored_document(version), submit=False
    )
    client.force_login(operator)

    response = client.get("/runs/")

    options = re.findall(rb'<option value="(\d+:\d+)"', response.content)
    assert options == [f"{version.plan_id}:{version.number}".encode()]
    assert draft.number == 2


def test_the_start_page_names_a_version_that_cannot_run(author, approver, operator, client):
    version = approved_version(author, approver, STEPS)
    draft = plan_services.create_version(
        version.plan, author, stored_document(version), submit=False
    )
    client.force_login(operator)

    chosen = client.get(f"/runs/new/?plan={version.plan_id}&version={version.number}")
    refused = client.get(f"/runs/new/?plan={version.plan_id}&version={draft.number}")

    assert b" selected>" in chosen.content
    assert b"cannot run: it is not approved." in refused.content


def test_the_start_page_needs_the_operator_role(viewer, client):
    client.force_login(viewer)

    assert client.get("/runs/new/").status_code == 403


def test_the_run_list_filters_by_status(author, approver, operator, client):
    version = approved_version(author, approver, STEPS)
    first = services.start_run(version, operator)
    second = services.start_run(version, operator)
    services.cancel_run(second, operator)
    client.force_login(operator)

    cancelled = client.get("/runs/?status=cancelled")
    unknown = client.get("/runs/?status=bogus")

    assert re.findall(rb'data-run="(\d+)"', cancelled.content) == [str(second.pk).encode()]
    assert re.findall(rb'data-run="(\d+)"', unknown.content) == [
        str(second.pk).encode(),
        str(first.pk).encode(),
    ]


def test_the_live_page_starts_from_a_snapshot_that_matches_its_last_seq(
    author, approver, operator, client
):
    version = approved_version(author, approver, STEPS)
    run = services.start_run(version, operator)
    drain()
    client.force_login(operator)

    response = client.get(f"/runs/{run.pk}/")

    assert response.status_code == 200
    data = _page_data(response)
    run.refresh_from_db()
    assert data["run"]["last_seq"] == run.last_seq == run.events.count()
    assert [(s["step_id"], s["status"]) for s in data["run"]["steps"]] == [
        ("inspect", "succeeded"),
        ("publish", "succeeded"),
    ]
    assert data["document"]["steps"][1]["args"]["content"] == "<script>alert(1)</script>"
    assert data["socket"] == f"/ws/runs/{run.pk}/"
    assert data["user"]["can_cancel"] is True and data["user"]["can_approve"] is False


def test_step_text_reaches_the_live_page_only_as_escaped_json(author, approver, operator, client):
    version = approved_version(author, approver, STEPS)
    run = services.start_run(version, operator)
    client.force_login(operator)

    body = client.get(f"/runs/{run.pk}/").content

    assert b"<script>alert(1)</script>" not in body
    assert b"<img src=x" not in body
    assert b"\\u003Cscript\\u003E" in body


def test_an_unknown_run_is_a_404(operator, client):
    client.force_login(operator)

    assert client.get("/runs/999/").status_code == 404
    assert client.get(f"/runs/{2**63}/").status_code == 404


def test_run_pages_need_a_login(client, author, approver, operator):
    version = approved_version(author, approver, STEPS)
    run = services.start_run(version, operator)

    response = client.get(f"/runs/{run.pk}/")

    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")
    assert Run.objects.count() == 1


def test_the_run_list_filters_by_plan(author, approver, operator, client):
    version = approved_version(author, approver, STEPS)
    mine = services.start_run(version, operator)
    other = approved_version(author, approver, STEPS)
    services.start_run(other, operator)
    client.force_login(operator)

    response = client.get(f"/runs/?plan={version.plan_id}")

    assert re.findall(rb'data-run="(\d+)"', response.content) == [str(mine.pk).encode()]
    assert f"status=cancelled&amp;plan={version.plan_id}".encode() in response.content


def test_the_run_page_tells_its_resume_panel_whether_the_policy_approves_read_only_replans(
    author, approver, operator, client, settings, tmp_path
):
    version = approved_version(author, approver, STEPS)
    run = services.start_run(version, operator)
    client.force_login(operator)
    before = _page_data(client.get(f"/runs/{run.pk}/"))["policy"]
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        "allow: {compute: ['*'], file_write: ['*']}\nauto_approve_replans: read_only\n"
    )
    settings.FORGE_POLICY = str(policy)  # read by the page; no step runs under it

    after = _page_data(client.get(f"/runs/{run.pk}/"))["policy"]

    assert before == {"auto_approve_replans": "never"}
    assert after == {"auto_approve_replans": "read_only"}


CHAIN = [
    {"id": f"s{n}", "description": f"Echo step {n}", "tool": "echo", "args": {"n": n}}
    | ({"depends_on": [f"s{n - 1}"]} if n else {})
    for n in range(8)
]


def test_a_snapshot_read_while_the_run_keeps_moving_never_counts_an_event_twice(
    author, approver, operator, client, monkeypatch
):
    # Issue 12, problem 5: the page showed "Succeeded, attempt 2" for a step that ran
    # once. A worker commits between every read of the page's snapshot (more often than
    # the snapshot retries), so the steps the page gets are newer than its last_seq unless
    # the snapshot is pinned to one seq. The page then applies every event after last_seq:
    # what it ends with must equal the run as the server knows it.
    from forge.runtime import rebuild
    from runs import events as event_rows
    from runs import snapshot as views
    from runs.engine import locked_run
    from runs.worker import _claim, _execute, finish

    version = approved_version(author, approver, CHAIN)
    run = services.start_run(version, operator)
    claims = []

    def advance():
        if not claims:
            with locked_run(run.pk) as locked:
                claims.append(_claim(locked, "s0"))
        elif claims[-1] is not None:
            claims.append(finish(claims[-1], _execute(claims[-1])))

    real_detail = views.detail

    def moving_detail(row):
        advance()  # the worker commits between the run's row and its steps
        return real_detail(row)

    monkeypatch.setattr(views, "detail", moving_detail)
    client.force_login(operator)

    data = _page_data(client.get(f"/runs/{run.pk}/"))["run"]

    run.refresh_from_db()
    assert run.last_seq > data["last_seq"]  # the run did move on while the page was read
    rows = [event_rows.from_row(r) for r in run.events.filter(seq__lte=data["last_seq"])]
    at_seq = rebuild(str(run.pk), sorted(rows, key=lambda e: e.seq))
    snapshot = {s["step_id"]: (s["status"], s["attempt"], s["tokens"]) for s in data["steps"]}
    for step_id, (status, attempt, tokens) in snapshot.items():
        step = at_seq.steps[step_id]
        assert (status, attempt, tokens) == (step.status, step.attempt, step.tokens), step_id
    assert data["budget"]["used_steps"] == at_seq.used_steps
    assert data["status"] == at_seq.status
