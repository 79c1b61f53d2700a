"""Issue 12, problem 6: statuses that cannot be misread. The plan list shows the latest
approved version and the latest draft apart; starting a blank plan saves nothing until
it has a step; the editor labels the saved version's status ("Saved v3: Approved") apart
from the live compile of what is on screen ("This draft: ...")."""

from __future__ import annotations

import json
import re

import pytest

from forge.plan import from_data
from plans import services
from plans.models import Plan

pytestmark = pytest.mark.django_db


def _cells(page: str, plan_id: int) -> dict[str, str]:
    row = re.search(rf'<tr data-plan="{plan_id}">(.*?)</tr>', page, re.DOTALL)
    assert row, f"no row for plan {plan_id}"
    return {
        name: re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", text)).strip()
        for name, text in re.findall(r'<td class="(\w+)"[^>]*>(.*?)</td>', row.group(1), re.DOTALL)
    }


def test_the_plan_list_shows_the_approved_version_apart_from_a_newer_draft(
    make_plan, plan_document, author, approver, viewer, client
):
    version = make_plan(author, name="Ran fine")
    services.approve(version, approver, "ok")
    broken = plan_document(steps=[{"id": "a", "description": "Read it", "tool": "nope"}])
    services.create_version(version.plan, author, from_data(broken), submit=False)
    client.force_login(viewer)

    cells = _cells(client.get("/plans/").content.decode(), version.plan_id)

    assert cells["approved"] == "v1 Approved"
    assert cells["latest"] == "v2 Has errors"


def test_a_plan_never_approved_says_so_and_shows_its_latest_version(
    make_plan, author, viewer, client
):
    version = make_plan(author, name="New idea")
    client.force_login(viewer)

    cells = _cells(client.get("/plans/").content.decode(), version.plan_id)

    assert cells["approved"] == "none yet"
    assert cells["latest"] == "v1 Awaiting approval"


def test_a_plan_whose_latest_version_is_the_approved_one_shows_it_once(
    approved_version, viewer, client
):
    client.force_login(viewer)

    cells = _cells(client.get("/plans/").content.decode(), approved_version.plan_id)

    assert cells["approved"] == "v1 Approved"
    assert cells["latest"] == "same as approved"


def test_starting_a_blank_plan_saves_nothing(author, client):
    client.force_login(author)

    response = client.get("/plans/draw/", {"name": "Drawn by hand", "goal": "Three steps"})

    assert response.status_code == 200
    assert Plan.objects.count() == 0
    data = json.loads(
        re.search(
            r'<script id="editor-data" type="application/json">(.*?)</script>',
            response.content.decode(),
            re.DOTALL,
        ).group(1)
    )
    assert data["plan"] == {"id": None, "name": "Drawn by hand"}
    assert data["version"]["number"] == 0 and data["version"]["status"] == "unsaved"
    assert data["version"]["document"]["goal"] == "Three steps"
    assert data["version"]["document"]["steps"] == []
    assert b"Not saved yet" in response.content


def test_the_blank_editor_needs_the_plan_create_permission(viewer, client):
    client.force_login(viewer)

    assert client.get("/plans/draw/").status_code == 403


def test_the_editor_labels_the_saved_version_apart_from_this_draft(
    approved_version, author, client
):
    client.force_login(author)

    page = client.get(f"/plans/{approved_version.plan_id}/edit/").content.decode()

    saved = re.search(
        r'<span class="saved-as" id="saved-as"[^>]*>(.*?)</span>\s*<span', page, re.DOTALL
    )
    assert saved
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", saved.group(1))).strip()
    assert text == "Saved v1 : Approved"
    assert re.search(r'<span class="draft-state" id="draft-state"[^>]*>This draft: <span', page)
