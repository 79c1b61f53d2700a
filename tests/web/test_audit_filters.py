"""Issue 12, problem 9: audit filters pick from the actors, actions and objects that
exist, match without regard to case, and can exclude (logins, say), in the page and the
API alike; an ``auditor`` reads the trail, exports it and walks the chain without
seeing plan arguments, and may read nothing else."""

from __future__ import annotations

import json
import re

import pytest

from audit.services import record

pytestmark = pytest.mark.django_db


@pytest.fixture
def trail():
    """A small trail: logins drowning two real actions, actors in mixed case."""
    for _ in range(3):
        record("Ada", "user.logged_in", "user", "1", {"ip_address": "10.0.0.1"})
        record("grace", "user.logged_out", "user", "2", {})
    record("Ada", "plan_version.created", "plan", "7", {"version": 1, "steps": 2})
    record(
        "grace",
        "run.step_approved",
        "run",
        "3",
        {"step": "publish", "args": {"path": "report.md", "content": "Q3 numbers"}},
    )


@pytest.fixture
def login(client):
    """``login(user)``: the client logged in without the login's own audit event, so the
    trail holds only what the test put there."""
    from django.contrib.auth.signals import user_logged_in

    from forge_web.audit_hooks import audit_login

    def log_in(user):
        user_logged_in.disconnect(dispatch_uid="forge_web.audit_logged_in")
        try:
            client.force_login(user)
        finally:
            user_logged_in.connect(audit_login, dispatch_uid="forge_web.audit_logged_in")
        return client

    return log_in


@pytest.fixture
def reader(login, viewer):
    """The viewer, over the API by session."""
    return login(viewer)


def _api(client, **query):
    response = client.get("/api/v1/audit", query)
    assert response.status_code == 200, response.content
    return response.json()["items"]


def _rows(response):
    assert response.status_code == 200
    return re.findall(
        rb'<td class="action"><a class="action-chip" href="[^"]*" title="[^"]*">([^<]+)</a>',
        response.content,
    )


# --- Matching without regard to case ------------------------------------------------------


def test_the_api_matches_actor_and_action_without_regard_to_case(trail, reader):
    client = reader

    by_actor = _api(client, actor="ADA")
    by_action = _api(client, action="Plan_Version.CREATED")

    assert {item["actor"] for item in by_actor} == {"Ada"} and len(by_actor) == 4
    assert [item["object_id"] for item in by_action] == ["7"]


def test_the_page_matches_without_regard_to_case(trail, login, viewer):
    client = login(viewer)

    response = client.get("/audit/", {"actor": "ada", "object_type": "PLAN"})

    assert _rows(response) == [b"plan_version.created"]


# --- Excluding ----------------------------------------------------------------------------


def test_the_api_excludes_actions_so_logins_do_not_drown_the_rest(trail, api_client, viewer):
    # Over a bearer token (whose creation is an event of its own), repeated parameters.
    items = _api(api_client(viewer), exclude_action=["user.logged_in", "USER.LOGGED_OUT"])

    assert [item["action"] for item in items] == [
        "token.created",
        "run.step_approved",
        "plan_version.created",
    ]


def test_the_page_excludes_logins(trail, login, viewer):
    client = login(viewer)

    everything = client.get("/audit/", {"actor": "ada"})
    link = re.search(
        rb'<a class="button secondary" href="\?([^"]+)" id="hide-logins"', everything.content
    )
    assert link, "the page offers to hide logins"
    hidden = client.get("/audit/?" + link.group(1).decode().replace("&amp;", "&"))

    assert _rows(everything).count(b"user.logged_in") == 3
    assert _rows(hidden) == [b"plan_version.created"]
    assert b'id="hide-logins"' not in hidden.content  # already hidden
    assert b'<option value="user.logged_in" selected>' in hidden.content


def test_the_api_excludes_an_actor(trail, reader):
    items = _api(reader, exclude_actor="GRACE")

    assert {item["actor"] for item in items} == {"Ada"}


# --- Picking from what exists -------------------------------------------------------------


def test_the_api_lists_the_actors_actions_and_object_types_that_exist(trail, reader):
    response = reader.get("/api/v1/audit/values")

    assert response.status_code == 200
    assert response.json() == {
        "actors": ["Ada", "grace"],
        "actions": [
            "plan_version.created",
            "run.step_approved",
            "user.logged_in",
            "user.logged_out",
        ],
        "object_types": ["plan", "run", "user"],
    }


def test_the_page_offers_the_existing_values_to_pick_from(trail, login, viewer):
    client = login(viewer)

    page = client.get("/audit/").content.decode()

    action = re.search(r'<select name="action"[^>]*>(.*?)</select>', page, re.DOTALL)
    assert action, "the action filter is a select"
    assert re.findall(r'<option value="([^"]*)"', action.group(1)) == [
        "",
        "plan_version.created",
        "run.step_approved",
        "user.logged_in",
        "user.logged_out",
    ]
    object_type = re.search(r'<select name="object_type"[^>]*>(.*?)</select>', page, re.DOTALL)
    assert object_type and re.findall(r'<option value="([^"]*)"', object_type.group(1)) == [
        "",
        "plan",
        "run",
        "user",
    ]
    actors = re.search(r'<datalist id="actor-choices">(.*?)</datalist>', page, re.DOTALL)
    assert actors and re.findall(r'<option value="([^"]*)"', actors.group(1)) == ["Ada", "grace"]
    assert 'list="actor-choices"' in page
    assert re.search(r'<datalist id="object-id-choices">.*<option value="7">', page, re.DOTALL)


# --- The auditor --------------------------------------------------------------------------


def test_an_auditor_reads_the_trail_without_plan_arguments(trail, api_client, auditor, viewer):
    as_auditor = {i["action"]: i["payload"] for i in _api(api_client(auditor))}
    as_viewer = {i["action"]: i["payload"] for i in _api(api_client(viewer))}

    assert as_viewer["run.step_approved"]["args"] == {"path": "report.md", "content": "Q3 numbers"}
    assert as_auditor["run.step_approved"] == {
        "step": "publish",
        "args": "[hidden: plan arguments]",
    }
    assert as_auditor["plan_version.created"] == {"version": 1, "steps": 2}


def test_an_auditors_export_hides_plan_arguments_and_says_so(trail, api_client, auditor):
    client = api_client(auditor)

    lines = b"".join(client.get("/api/v1/audit/export", {"format": "jsonl"}).streaming_content)
    csv = b"".join(client.get("/api/v1/audit/export", {"format": "csv"}).streaming_content)

    records = [json.loads(line) for line in lines.splitlines()]
    approved = next(r for r in records if r["action"] == "run.step_approved")
    assert approved["payload"]["args"] == "[hidden: plan arguments]"
    assert approved["payload_redacted"] is True
    assert "payload_redacted" not in records[0]
    assert b"Q3 numbers" not in lines and b"Q3 numbers" not in csv
    assert b"[hidden: plan arguments]" in csv


def test_an_auditors_page_hides_plan_arguments(trail, client, auditor, viewer):
    client.force_login(auditor)
    hidden = client.get("/audit/")
    client.force_login(viewer)
    shown = client.get("/audit/")

    assert hidden.status_code == 200
    assert b"Q3 numbers" not in hidden.content and b"[hidden: plan arguments]" in hidden.content
    assert b"Q3 numbers" in shown.content


@pytest.mark.parametrize(
    "path",
    ["/api/v1/plans", "/api/v1/runs", "/api/v1/tools", "/api/v1/plans/1/versions/1/export"],
)
def test_an_auditor_may_not_read_plans_runs_or_tools(api_client, auditor, path):
    assert api_client(auditor).get(path).status_code == 403


def test_an_auditor_may_walk_the_chain_and_read_metrics(trail, api_client, auditor):
    client = api_client(auditor)

    assert client.post("/api/v1/audit/verify").json()["ok"] is True
    assert client.get("/api/v1/metrics").status_code == 200


@pytest.mark.parametrize(
    ("path", "status"),
    [("/audit/", 200), ("/metrics/", 200), ("/plans/", 403), ("/runs/", 403), ("/review/", 403)],
)
def test_an_auditors_pages(client, auditor, path, status):
    client.force_login(auditor)

    assert client.get(path).status_code == status


def test_the_nav_shows_an_auditor_only_what_they_may_open(client, auditor):
    client.force_login(auditor)

    nav = re.search(
        r'<nav class="nav">(.*?)</nav>', client.get("/audit/").content.decode(), re.DOTALL
    )

    assert nav and re.findall(r">([A-Za-z ]+)</a>", nav.group(1)) == [
        "Audit",
        "Metrics",
        "API docs",
    ]
