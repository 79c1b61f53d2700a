"""The editor's other tools: the text view both ways, undo and redo, shortcuts and their
overlay, the argument form generated from a tool's JSON Schema, badges and the deliverable
painted, exports, the overview of a large plan, and the diff view."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from forge.plan import from_data
from plans import services

from .conftest import shoot
from .graph import (
    classes,
    click_node,
    problems,
    settle,
    text_value,
    type_text,
    wait_compiled,
    wait_ready,
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _reaches_example_com(settings):
    # The plan's first step GETs https://example.com/changelog: this deployment lets
    # http_request reach it (otherwise the step would be host_not_allowed).
    settings.FORGE_HTTP_ALLOWED_HOSTS = ["example.com"]


PLAN = {
    "goal": "Fetch the changelog and publish the notes",
    "deliverable": "publish",
    "steps": [
        {
            "id": "fetch",
            "description": "Fetch the changelog from the release server",
            "depends_on": [],
            "tool": "http_request",
            "args": {"method": "GET", "url": "https://example.com/changelog"},
            "done_when": {"required_keys": ["status"], "checks": ["status == `200`"]},
        },
        {
            "id": "publish",
            "description": "Write the release notes file",
            "depends_on": ["fetch"],
            "tool": "file_write",
            "args": {"path": "NOTES.md", "content": "# Notes"},
            "done_when": {"required_keys": ["committed"]},
        },
    ],
}


def _open(page, people, document=PLAN, name="Release"):
    ada = people.make("ada", "author")
    version = services.create_plan(ada, name, from_data(document))
    people.login(page, ada)
    page.goto(f"/plans/{version.plan_id}/edit/")
    wait_ready(page)
    return version


def _document(page):
    return page.evaluate("window.forge.editor.store.document")


def test_the_text_view_and_the_graph_edit_the_same_document(page, people):
    _open(page, people)
    page.get_by_role("button", name="JSON", exact=True).click()
    data = json.loads(text_value(page))
    assert data["steps"][1]["id"] == "publish"
    data["steps"].append({"id": "announce", "depends_on": ["publish"], "tool": "noop"})
    data["deliverable"] = "announce"
    type_text(page, json.dumps(data, indent=2))
    wait_compiled(page)
    page.get_by_role("button", name="Graph", exact=True).click()
    settle(page)
    assert "deliverable" in classes(page, "announce")
    assert page.evaluate("window.forge.editor.cy.getElementById('publish>announce').length") == 1

    # An edit in the graph shows in the YAML.
    click_node(page, "announce")
    page.fill("[data-field=description]", "Announce the release in the team channel")
    page.get_by_role("button", name="YAML", exact=True).click()
    expect(page.locator("#text-view .CodeMirror")).to_contain_text(
        "description: Announce the release in the team channel"
    )

    # Text that does not parse leaves the document alone and says where it is wrong.
    before = _document(page)
    type_text(page, "goal: [unclosed\nsteps: []\n")
    expect(page.locator("#text-error")).to_contain_text("Line")
    assert _document(page) == before
    shoot(page, "text-view")


def test_keyboard_shortcuts_undo_redo_and_the_help_overlay(page, people):
    _open(page, people)
    click_node(page, "publish")
    page.keyboard.press("n")  # a new step after the selected one
    settle(page)
    assert _document(page)["steps"][-1] == {"id": "step_1", "depends_on": ["publish"]}
    page.keyboard.press("Control+z")
    assert [s["id"] for s in _document(page)["steps"]] == ["fetch", "publish"]
    page.keyboard.press("Control+Shift+z")
    assert [s["id"] for s in _document(page)["steps"]] == ["fetch", "publish", "step_1"]
    expect(page.locator("#dirty-flag")).to_be_visible()

    page.keyboard.press("?")
    help_dialog = page.locator("#help-dialog")
    expect(help_dialog).to_be_visible()
    expect(help_dialog.locator(".shortcut")).to_have_count(18)
    expect(help_dialog).to_contain_text("Add a step")
    shoot(page, "help")
    page.keyboard.press("Escape")
    expect(help_dialog).to_be_hidden()


def test_the_argument_form_follows_the_tool_schema_and_badges_are_painted(page, people):
    _open(page, people)
    click_node(page, "fetch")
    expect(page.locator(".args-form select[name=method]")).to_have_value("GET")
    expect(page.locator(".args-form [name=url]")).to_have_value("https://example.com/changelog")

    # sleep needs "seconds": without it the step gets an "invalid args" badge.
    page.select_option("select[name=tool]", "sleep")
    wait_compiled(page)
    assert "d-invalid_args" in classes(page, "fetch")
    assert page.evaluate("window.forge.editor.cy.getElementById('fetch').data('badgeUrl')")
    page.fill(".args-form input[name=seconds]", "1.5")
    wait_compiled(page)
    assert "d-invalid_args" not in classes(page, "fetch")
    fetch = _document(page)["steps"][0]
    assert (fetch["tool"], fetch["args"]) == ("sleep", {"seconds": 1.5})

    # A deliverable something depends on is marked, and warnings are amber.
    page.mouse.click(*_corner(page))
    page.select_option("[data-field=deliverable]", "fetch")
    wait_compiled(page)
    assert {"bad-deliverable", "error"} <= set(classes(page, "fetch"))
    assert ("unreachable_deliverable", "publish") in problems(page)
    assert "warning" in classes(page, "publish")
    shoot(page, "badges")


def test_exports_and_the_overview_of_a_large_plan(page, people):
    steps = [{"id": "s0", "description": "Start the batch", "depends_on": [], "tool": "noop"}]
    for index in range(1, 60):
        steps.append(
            {
                "id": f"s{index}",
                "description": f"Process part {index} of the batch",
                "depends_on": [f"s{(index - 1) // 2}"],
                "tool": "noop",
            }
        )
    steps.append(
        {
            "id": "done",
            "description": "Collect the results",
            "depends_on": [f"s{i}" for i in range(30, 60)],
            "tool": "noop",
        }
    )
    _open(page, people, {"goal": "A wide batch", "steps": steps}, name="Batch")
    expect(page.locator("#minimap")).to_be_visible()
    shoot(page, "overview")

    with page.expect_download() as download:
        page.locator("details.menu summary").click()
        page.get_by_role("button", name="JSON (current document)").click()
    exported = json.loads(download.value.path().read_text())
    assert [s["id"] for s in exported["steps"]][:3] == ["s0", "s1", "s2"]
    with page.expect_download() as download:
        page.locator("details.menu summary").click()
        page.get_by_role("button", name="Mermaid (saved version)").click()
    assert "flowchart TD" in download.value.path().read_text()
    with page.expect_download() as download:
        page.locator("details.menu summary").click()
        page.get_by_role("button", name="PNG image of the graph").click()
    assert download.value.path().read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_diff_view_shows_both_versions_on_one_graph(page, people):
    version = _open(page, people)
    changed = json.loads(json.dumps(PLAN))
    changed["steps"][1]["description"] = "Write and commit the release notes file"
    changed["steps"].append(
        {"id": "announce", "description": "Announce it", "depends_on": ["publish"], "tool": "noop"}
    )
    changed["deliverable"] = "announce"
    del changed["steps"][0]["done_when"]
    services.create_version(version.plan, version.author, from_data(changed), note="announce")
    page.goto(f"/plans/{version.plan_id}/diff/?from=1&to=2")
    page.wait_for_selector("#diff-changes li")
    cy_classes = page.evaluate(
        "window.forge.graph.ready.then(g => Object.fromEntries("
        "g.cy.elements().map(e => [e.id(), e.classes()])))"
    )
    assert "added" in cy_classes["announce"]
    assert "changed" in cy_classes["publish"] and "changed" in cy_classes["fetch"]
    assert "added" in cy_classes["publish>announce"]
    expect(page.locator("#diff-legend")).to_contain_text("Added in v2")
    expect(page.locator("#diff-changes li[data-kind=changed]", has_text="publish")).to_contain_text(
        "description: Write the release notes file → Write and commit the release notes file"
    )
    expect(page.locator("#diff-changes li[data-kind=changed]", has_text="fetch")).to_contain_text(
        "done_when.required_keys: − status" + "done_when.checks: − status == `200`"
    )
    expect(page.locator("#diff-changes li[data-kind=plan]")).to_have_text(
        "plan deliverable" + "deliverable: publish → announce"
    )
    shoot(page, "diff")


def _corner(page):
    box = page.locator("#graph").bounding_box()
    return box["x"] + 14, box["y"] + 14


def test_the_plan_list_searches_by_name_and_filters_by_status(page, people):
    ada = people.make("ada", "author")
    grace = people.make("grace", "approver")
    approved = services.create_plan(ada, "Release notes", from_data(PLAN))
    services.approve(approved, grace, "fine")
    services.create_plan(ada, "Broken release", from_data({"goal": "g", "steps": []}))
    services.create_plan(ada, "Supplier check", from_data(PLAN))
    people.login(page, ada)
    page.goto("/plans/")
    rows = page.locator("table.plans tbody tr")
    expect(rows).to_have_count(3)
    page.fill("input[name=q]", "release")
    page.get_by_role("button", name="Search").click()
    expect(rows).to_have_count(2)
    page.locator(".chip[data-status=approved]").click()
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("Release notes")
    expect(rows.first).to_contain_text("Approved")
    expect(rows.first).to_contain_text("v1")
    page.goto("/plans/?status=has_errors")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("Broken release")
    shoot(page, "list")
