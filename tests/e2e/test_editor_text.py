"""The editor's text: nothing typed is ever lost, graph and text side by side, and a code
editor with line numbers and error markers (issue 12, problem 1).

Problem 1 as it was: text with a syntax error was thrown away, without a word, when the
author switched to the graph; the text box had no line numbers; graph and text could not
be seen together.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from forge.plan import from_data
from plans import services

from .conftest import shoot
from .graph import click_node, settle, text_value, type_text, wait_compiled, wait_ready

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

# A syntax error on line 3: the flow sequence is never closed.
BROKEN = """goal: Fetch the changelog and publish the notes
steps:
  - id: fetch
    depends_on: [
  - id: publish
"""


def _open(page, people):
    ada = people.make("ada", "author")
    version = services.create_plan(ada, "Release", from_data(PLAN))
    people.login(page, ada)
    page.goto(f"/plans/{version.plan_id}/edit/")
    wait_ready(page)
    return version


def _document(page):
    return page.evaluate("window.forge.editor.store.document")


def test_text_with_a_syntax_error_survives_a_switch_to_the_graph(page, people):
    _open(page, people)
    before = _document(page)
    page.get_by_role("button", name="YAML", exact=True).click()
    type_text(page, BROKEN)
    expect(page.locator("#text-error")).to_contain_text("Line")

    # Graph, JSON and the T shortcut are each refused while the text does not parse: the
    # text stays as typed, the error says why, and the document is untouched.
    page.get_by_role("button", name="Graph", exact=True).click()
    expect(page.locator("#editor")).to_have_attribute("data-view", "yaml")
    expect(page.locator("#text-view")).to_be_visible()
    expect(page.locator("#text-error")).to_contain_text("fix it or undo it")
    assert text_value(page) == BROKEN
    page.get_by_role("button", name="JSON", exact=True).click()
    expect(page.locator("#editor")).to_have_attribute("data-view", "yaml")
    assert text_value(page) == BROKEN
    assert _document(page) == before
    shoot(page, "switch-refused")

    # Fixed, the text becomes the document and the switch goes through.
    fixed = BROKEN.replace("depends_on: [\n", "depends_on: []\n") + "    depends_on: [fetch]\n"
    type_text(page, fixed)
    expect(page.locator("#text-error")).to_be_hidden()
    page.get_by_role("button", name="Graph", exact=True).click()
    expect(page.locator("#editor")).to_have_attribute("data-view", "graph")
    settle(page)
    assert [step["id"] for step in _document(page)["steps"]] == ["fetch", "publish"]
    assert _document(page)["steps"][1]["depends_on"] == ["fetch"]


def test_the_split_view_shows_graph_and_text_together_in_sync_both_ways(page, people):
    _open(page, people)
    page.get_by_role("button", name="Split", exact=True).click()
    expect(page.locator("#editor")).to_have_attribute("data-view", "split")
    graph = page.locator("#graph").bounding_box()
    text = page.locator("#text-view .CodeMirror").bounding_box()
    assert graph["width"] > 200 and text["width"] > 200
    assert graph["x"] + graph["width"] <= text["x"] + 1, "graph and text side by side"
    assert "id: publish" in text_value(page)

    # Text -> graph.
    yaml = text_value(page) + "  - id: announce\n    depends_on: [publish]\n    tool: noop\n"
    type_text(page, yaml)
    page.wait_for_timeout(700)  # the text is read 400 ms after the last keystroke
    settle(page)
    wait_compiled(page)
    assert page.evaluate("window.forge.editor.cy.getElementById('publish>announce').length") == 1

    # Graph -> text, while the text stays in view.
    click_node(page, "announce")
    page.fill("[data-field=description]", "Announce the release in the team channel")
    expect(page.locator("#text-view .CodeMirror")).to_contain_text(
        "description: Announce the release in the team channel"
    )
    shoot(page, "split")

    # A graph edit never overwrites text the author has not finished: the broken text
    # stays, and says the graph's edits wait for it.
    type_text(page, BROKEN)
    expect(page.locator("#text-error")).to_contain_text("Line")
    click_node(page, "fetch")
    page.fill("[data-field=description]", "Fetch it")
    page.wait_for_timeout(600)
    assert text_value(page) == BROKEN
    shoot(page, "split-broken")


def test_the_code_editor_numbers_lines_and_marks_the_line_in_error(page, people):
    _open(page, people)
    page.get_by_role("button", name="YAML", exact=True).click()
    numbers = page.locator("#text-view .CodeMirror-linenumber")
    expect(numbers.filter(has_text=re.compile(r"^1$"))).to_be_visible()
    expect(numbers.filter(has_text=re.compile(r"^12$"))).to_be_visible()
    expect(page.locator("#text-view .forge-error-marker")).to_have_count(0)
    # Syntax colouring comes from CodeMirror's YAML mode.
    expect(page.locator("#text-view .cm-atom").first).to_be_visible()

    type_text(page, BROKEN)
    marker = page.locator("#text-view .forge-error-marker")
    expect(marker).to_have_count(1)
    expect(marker).to_be_visible()
    # The marker sits on the line the error names.
    line = int(re.search(r"Line (\d+)", page.locator("#text-error").inner_text()).group(1))
    marked = page.evaluate(
        "() => { const cm = document.querySelector('#text-view .CodeMirror').CodeMirror;"
        " const found = []; cm.eachLine((h) => { if (h.gutterMarkers &&"
        " h.gutterMarkers['forge-errors']) found.push(cm.getLineNumber(h) + 1); });"
        " return found; }"
    )
    assert marked == [line]
    expect(page.locator("#text-view .CodeMirror-code .forge-error-line")).to_have_count(1)
    shoot(page, "error-marker")

    # JSON is checked the same way.
    type_text(page, "goal: fine\nsteps: []\n")
    expect(marker).to_have_count(0)
    page.get_by_role("button", name="JSON", exact=True).click()
    type_text(page, '{\n  "goal": "x",\n  "steps": [\n}\n')
    expect(page.locator("#text-view .forge-error-marker")).to_have_count(1)
    expect(page.locator("#text-error")).to_contain_text("Line")
    wait_compiled(page)
