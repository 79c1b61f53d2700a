"""Data between steps on the web: a worker runs a step's call resolved from an earlier
step's output; a step waiting for approval shows the resolved values in its preview and
the approval binds them; a call that cannot be resolved fails before it runs; the compile
API reports wrong references and lists the data edges."""

from __future__ import annotations

import hashlib

import pytest

from forge.plan import canonical_json
from runs import services
from runs.models import ExecutionRecord, Run, RunEvent, StepApproval, StepRun

from .runs_helpers import approved_version, drain

pytestmark = pytest.mark.django_db(transaction=True)

FACTS = {
    "id": "facts",
    "description": "Collect the release facts",
    "tool": "echo",
    "args": {"version": "2.4", "changes": "- parser handles empty plans\n"},
}
PUBLISH = {
    "id": "publish",
    "description": "Write the release notes from the facts",
    "tool": "file_write",
    "depends_on": ["facts"],
    "args": {
        "path": "NOTES.md",
        "content": {
            "$join": [
                "# ",
                {"$from": "facts", "path": "version"},
                "\n\n",
                {"$from": "facts", "path": "changes"},
            ]
        },
    },
}
NOTES = "# 2.4\n\n- parser handles empty plans\n"
RESOLVED_HASH = hashlib.sha256(
    canonical_json({"path": "NOTES.md", "content": NOTES}).encode()
).hexdigest()


@pytest.fixture
def workspaces(settings, tmp_path):
    settings.FORGE_WORKSPACES = str(tmp_path / "workspaces")
    return tmp_path / "workspaces"


def _events(run, step_id):
    return list(RunEvent.objects.filter(run=run, step_id=step_id).order_by("seq"))


def test_a_run_through_the_worker_writes_what_the_earlier_step_returned(
    author, approver, operator, workspaces
):
    version = approved_version(author, approver, [FACTS, PUBLISH])

    run = services.start_run(version, operator)
    drain()

    run.refresh_from_db()
    assert run.status == "succeeded"
    assert (workspaces / f"run-{run.pk}" / "NOTES.md").read_text() == NOTES
    assert [(e.event_type, e.tool_args_hash) for e in _events(run, "publish")] == [
        ("step_ready", RESOLVED_HASH),
        ("step_started", RESOLVED_HASH),
        ("step_succeeded", RESOLVED_HASH),
    ]
    record = ExecutionRecord.objects.get(run=run, step_id="publish")
    assert record.args_hash == RESOLVED_HASH


def test_a_waiting_step_shows_the_resolved_values_and_its_approval_binds_them(
    author, approver, operator, workspaces, client, api_client
):
    version = approved_version(
        author, approver, [FACTS, PUBLISH], requires_approval_before=["file_write"]
    )
    run = services.start_run(version, operator)
    drain()

    [waiting] = [e for e in _events(run, "publish") if e.event_type == "step_awaiting_approval"]
    preview = waiting.facts["preview"]
    assert waiting.tool_args_hash == RESOLVED_HASH
    assert preview["text"].startswith(
        "values from earlier steps:\n"
        "  content <- $join of facts.version, facts.changes (text of 36 characters)\n"
    )
    assert "+# 2.4\n+\n+- parser handles empty plans\n" in preview["text"]
    client.force_login(approver)
    page = client.get("/review/").content.decode()
    assert "with the values from <code>facts.version</code>, <code>facts.changes</code>" in page
    assert "+- parser handles empty plans" in page

    answer = api_client(approver).post(
        f"/api/v1/runs/{run.pk}/steps/publish/approve",
        {"comment": "notes read well", "preview_hash": preview["hash"]},
        content_type="application/json",
    )
    drain()

    assert answer.status_code == 200, answer.json()
    assert StepApproval.objects.get(run=run, step_id="publish").args_hash == RESOLVED_HASH
    assert Run.objects.get(pk=run.pk).status == "succeeded"
    assert (workspaces / f"run-{run.pk}" / "NOTES.md").read_text() == NOTES


def test_a_value_the_tool_refuses_at_run_time_fails_the_step_before_it_runs(
    author, approver, operator, workspaces
):
    # the echo's output is known only at run time: the compiler cannot see it is a number
    seed = {"id": "seed", "description": "Count the release changes", "tool": "echo",
            "args": {"count": 2}}  # fmt: skip
    facts = {**FACTS, "depends_on": ["seed"], "args": {"n": {"$from": "seed", "path": "count"}}}
    publish = {**PUBLISH, "args": {"path": "NOTES.md", "content": {"$from": "facts", "path": "n"}}}
    version = approved_version(author, approver, [seed, facts, publish])

    run = services.start_run(version, operator)
    drain()

    run.refresh_from_db()
    assert run.status == "needs_replan"
    step = StepRun.objects.get(run=run, step_id="publish")
    assert (step.status, step.error) == (
        "failed",
        "arguments of 'file_write': data.content must be string (with the values from "
        "facts.n) [invalid_args]",
    )
    assert not ExecutionRecord.objects.filter(run=run, step_id="publish").exists()
    assert not (workspaces / f"run-{run.pk}" / "NOTES.md").exists()


def test_compile_lists_data_edges_and_reports_a_reference_to_a_step_that_is_not_an_ancestor(
    author, api_client
):
    client = api_client(author)
    good = client.post(
        "/api/v1/compile",
        {"document": {"goal": "Publish the notes", "steps": [FACTS, PUBLISH]}},
        content_type="application/json",
    ).json()
    loose = {**PUBLISH, "depends_on": []}
    bad = client.post(
        "/api/v1/compile",
        {"document": {"goal": "Publish the notes", "steps": [FACTS, loose],
                      "deliverable": "publish"}},
        content_type="application/json",
    ).json()  # fmt: skip

    assert good["ok"] is True
    assert good["graph"]["data_edges"] == [
        {"source": "facts", "target": "publish", "path": "version", "at": "content"},
        {"source": "facts", "target": "publish", "path": "changes", "at": "content"},
    ]
    assert bad["ok"] is False
    assert [(d["code"], d["nodes"], d["edges"]) for d in bad["diagnostics"][:2]] == [
        ("invalid_reference", ["publish", "facts"], [["facts", "publish"]]),
        ("invalid_reference", ["publish", "facts"], [["facts", "publish"]]),
    ]


def test_the_tool_catalogue_says_what_each_output_holds(api_client, viewer):
    items = {i["name"]: i for i in api_client(viewer).get("/api/v1/tools").json()["items"]}

    assert items["file_read"]["output_schema"] == {
        "type": "object",
        "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
        "additionalProperties": False,
    }
    assert (items["file_read"]["echoes_args"], items["echo"]["echoes_args"]) == (False, True)


def test_the_resolved_call_waits_for_a_person_other_than_the_author_and_its_own_preview(
    author, approver, operator, workspaces, api_client
):
    version = approved_version(
        author, approver, [FACTS, PUBLISH], requires_approval_before=["file_write"]
    )
    run = services.start_run(version, operator)
    drain()
    url = f"/api/v1/runs/{run.pk}/steps/publish/approve"

    by_author = api_client(author).post(url, {"comment": "mine"}, content_type="application/json")
    other_preview = api_client(approver).post(
        url, {"comment": "ok", "preview_hash": "0" * 64}, content_type="application/json"
    )
    drain()

    assert by_author.status_code == 403
    assert (other_preview.status_code, other_preview.json()["code"]) == (409, "preview_changed")
    assert StepRun.objects.get(run=run, step_id="publish").status == "awaiting_approval"
    assert not StepApproval.objects.filter(run=run).exists()
    assert not (workspaces / f"run-{run.pk}" / "NOTES.md").exists()
