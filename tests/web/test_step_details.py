"""What the step details need on each page that asks for an approval (the version page, the
approval queue, a run's replan view): the steps as written and whether each pauses, and,
where a run gave them, the values of the arguments taken from earlier steps (redacted,
like a preview); the DOM slot the component fills. An auditor sees none of these pages."""

from __future__ import annotations

import json
import re

import pytest

from forge.plan import from_data
from plans import services as plan_services
from runs import services
from runs.models import Run

from .runs_helpers import approved_version, drain

pytestmark = pytest.mark.django_db(transaction=True)

GOAL = "Publish the release notes"
READ = {
    "id": "read",
    "description": "Read the changelog entry",
    "tool": "echo",
    "args": {"content": "Fixed the login page", "note": "password=hunter2"},
}
PUBLISH = {
    "id": "publish",
    "description": "Write the release notes file",
    "tool": "file_write",
    "args": {
        "path": "NOTES.md",
        "content": {
            "$join": [
                "# 2.4\n\n",
                {"$from": "read", "path": "content"},
                "\n",
                {"$from": "read", "path": "note"},
            ]
        },
    },
    "depends_on": ["read"],
    "done_when": {"required_keys": ["path"], "checks": ["committed == `true`"]},
    "timeout_s": 20,
    "rollback_hint": "delete NOTES.md",
}
GUARDED = {"requires_approval_before": ["file_write"]}
# The written value resolved from read's output, its password redacted as a preview's.
CONTENT = json.dumps("# 2.4\n\nFixed the login page\npassword=[redacted]")

FETCH = {"id": "fetch", "tool": "echo", "args": {"orders": 48, "late": 7}}
SCORE = {
    "id": "score",
    "tool": "echo",
    "args": {"late": {"$from": "fetch", "path": "late"}},
    "depends_on": ["fetch"],
    "done_when": {"required_keys": ["late"], "checks": ["late <= `5`"]},
}


def page_data(response, element_id):
    match = re.search(
        rf'<script id="{element_id}" type="application/json">(.*?)</script>',
        response.content.decode(),
        re.DOTALL,
    )
    assert match, f"no #{element_id} on the page"
    return json.loads(match.group(1))


def waiting_run(author, approver, operator):
    version = approved_version(author, approver, [READ, PUBLISH], goal=GOAL, **GUARDED)
    run = services.start_run(version, operator)
    drain()
    run.refresh_from_db()
    assert run.status == "awaiting_approval"
    return run


def test_the_version_page_has_the_step_table_and_the_data_it_reads(author, approver, client):
    version = approved_version(author, approver, [READ, PUBLISH], goal=GOAL, **GUARDED)
    client.force_login(approver)

    response = client.get(f"/plans/{version.plan_id}/versions/1/")

    body = response.content.decode()
    assert 'id="step-table"' in body
    assert "forge/css/step-details.css" in body
    graph = page_data(response, "graph-data")["version"]
    assert graph["document"]["steps"][1]["args"]["content"]["$join"][1] == {
        "$from": "read",
        "path": "content",
    }
    assert graph["document"]["steps"][1]["rollback_hint"] == "delete NOTES.md"
    [pause] = [d for d in graph["diagnostics"] if d["code"] == "approval_required"]
    assert pause["nodes"] == ["publish"]


def test_the_queue_hands_each_version_cards_steps_and_pauses_over(author, approver, client):
    document = from_data({"goal": GOAL, **GUARDED, "steps": [READ, PUBLISH]})
    version = plan_services.create_plan(author, "Notes", document)
    client.force_login(approver)

    response = client.get("/review/")

    key = f"version-{version.pk}"
    assert f'data-steps-for="{key}"' in response.content.decode()
    graph = page_data(response, "review-data")["graphs"][key]
    assert [step["id"] for step in graph["to"]["steps"]] == ["read", "publish"]
    [pause] = graph["pauses"]
    assert pause["step"] == "publish"
    assert any("file_write" in reason for reason in pause["reasons"])


def test_the_queue_hands_a_waiting_step_over_with_its_resolved_values(
    author, approver, operator, client
):
    run = waiting_run(author, approver, operator)
    client.force_login(approver)

    response = client.get("/review/")

    key = f"step-{run.pk}-publish"
    assert f'data-steps-for="{key}"' in response.content.decode()
    step = page_data(response, "review-data")["steps"][key]
    assert step["step"] == PUBLISH
    assert step["resolved"] == {"args": {"content": {"text": CONTENT, "truncated": False}}}
    [pause] = step["pauses"]
    assert pause["step"] == "publish" and pause["reasons"]
    assert "hunter2" not in json.dumps(step["resolved"])


def test_the_replan_page_hands_each_versions_pauses_and_resolved_values_over(
    author, approver, operator, viewer, client
):
    version = approved_version(author, approver, [FETCH, SCORE], goal=GOAL)
    run = services.start_run(version, operator)
    drain()
    run.refresh_from_db()
    assert run.status == "needs_replan"
    client.force_login(viewer)

    response = client.get(f"/runs/{run.pk}/replans/")

    assert 'id="step-table"' in response.content.decode()
    data = page_data(response, "replan-data")
    assert data["pauses"] == {"1": []}
    assert data["resolved"]["1"] == {"score": {"args": {"late": {"text": "7", "truncated": False}}}}


def test_a_value_a_run_cannot_give_yet_says_why(author, approver, operator):
    from reviews.step_values import argument_values

    values = argument_values(PUBLISH["args"], {})

    assert set(values) == {"content"}
    assert "read" in values["content"]["problem"]
    assert "not succeeded" in values["content"]["problem"]


def test_a_long_value_is_cut_and_says_so():
    from reviews.step_values import VALUE_LIMIT, argument_values

    values = argument_values({"text": {"$from": "a", "path": "x"}}, {"a": {"x": "y" * 10_000}})

    assert values["text"]["truncated"] is True
    assert len(values["text"]["text"]) == VALUE_LIMIT


def test_an_auditor_sees_none_of_the_pages_with_step_arguments(
    author, approver, operator, auditor, client
):
    run = waiting_run(author, approver, operator)
    client.force_login(auditor)

    for path in (f"/plans/{run.plan_id}/versions/1/", "/review/", f"/runs/{run.pk}/replans/"):
        assert client.get(path).status_code == 403, path
    assert Run.objects.count() == 1
