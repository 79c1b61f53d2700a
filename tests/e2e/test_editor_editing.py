"""Editing without blind spots (issue 25, item 7): undo after moving a step undoes the
move and nothing else; the split view fits the graph beside the text; a comment typed in
the YAML text survives the graph's edits (or the edit asks first); a 300-step plan has a
search that centres and selects the step found.

Item 7 as it was: undo after a move undid the edit before it (five dependencies became
four); split view left half of every node under the text pane; a YAML comment vanished at
the next graph edit; nothing found a step in a large plan.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from forge.plan import from_data
from plans import services

from .conftest import shoot
from .graph import (
    TEXT_VALUE,
    click_node,
    drag_between,
    node_point,
    settle,
    text_value,
    type_text,
    wait_compiled,
    wait_ready,
)

pytestmark = pytest.mark.django_db(transaction=True)

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
        },
        {
            "id": "template",
            "description": "Read the notes template",
            "depends_on": [],
            "tool": "file_read",
            "args": {"path": "TEMPLATE.md"},
        },
        {
            "id": "check",
            "description": "Check the changelog against the template",
            "depends_on": ["fetch", "template"],
            "tool": "noop",
        },
        {
            "id": "publish",
            "description": "Write the release notes file",
            "depends_on": ["check"],
            "tool": "file_write",
            "args": {"path": "NOTES.md", "content": "# Notes"},
        },
    ],
}


def _wide_plan(width: int = 14) -> dict:
    """One row of ``width`` steps feeding one last step: wider than half the canvas."""
    row = [{"id": f"part_{i}", "depends_on": [], "tool": "noop"} for i in range(width)]
    last = {"id": "merge", "depends_on": [step["id"] for step in row], "tool": "noop"}
    return {"goal": "Many parts, one merge", "steps": [*row, last]}


def _big_plan(layers: int = 30, width: int = 10) -> dict:
    steps = []
    for layer in range(layers):
        for column in range(width):
            deps = [f"s{layer - 1}_{(column * 3 + 1) % width}"] if layer else []
            steps.append(
                {
                    "id": f"s{layer}_{column}",
                    "description": f"Process part {column} of stage {layer}",
                    "depends_on": deps,
                    "tool": "noop",
                }
            )
    return {"goal": "A large batch", "steps": steps}


def _open(page, people, document=PLAN, name="Release"):
    ada = people.make("ada", "author")
    version = services.create_plan(ada, name, from_data(document))
    people.login(page, ada)
    page.goto(f"/plans/{version.plan_id}/edit/")
    wait_ready(page)
    settle(page)
    return version


def _document(page):
    return page.evaluate("window.forge.editor.store.document")


def _dependencies(page):
    return sorted((d, s["id"]) for s in _document(page)["steps"] for d in s.get("depends_on", []))


def _position(page, node_id):
    return page.evaluate("(id) => window.forge.editor.cy.getElementById(id).position()", node_id)


def _drag_node(page, node_id, dx, dy):
    start = node_point(page, node_id)
    page.mouse.move(start["x"], start["y"])
    page.mouse.down()
    page.mouse.move(start["x"] + dx / 2, start["y"] + dy / 2, steps=6)
    page.mouse.move(start["x"] + dx, start["y"] + dy, steps=6)
    page.mouse.up()


def _near(a, b, tolerance=1.0):
    return abs(a["x"] - b["x"]) < tolerance and abs(a["y"] - b["y"]) < tolerance


def test_undo_after_a_move_puts_the_step_back_and_leaves_the_dependencies(page, people):
    _open(page, people)
    drag_between(page, "template", "publish")  # a fourth dependency, drawn with the mouse
    settle(page)
    four = _dependencies(page)
    assert len(four) == 4 and ("template", "publish") in four

    page.get_by_role("button", name="Move steps").click()
    before = _position(page, "fetch")
    _drag_node(page, "fetch", 180, 70)
    moved = _position(page, "fetch")
    assert moved["x"] > before["x"] + 100
    shoot(page, "moved")

    page.keyboard.press("Control+z")  # undoes the move, and only the move
    settle(page)
    page.wait_for_timeout(400)  # the step glides back
    assert _near(_position(page, "fetch"), before)
    assert _dependencies(page) == four
    assert page.evaluate("window.forge.editor.store.layout") is None
    shoot(page, "move-undone")

    page.keyboard.press("Control+z")  # then the drawn dependency
    settle(page)
    assert len(_dependencies(page)) == 3

    page.keyboard.press("Control+Shift+z")
    page.keyboard.press("Control+Shift+z")  # and both again
    settle(page)
    page.wait_for_timeout(400)
    assert _dependencies(page) == four
    assert _near(_position(page, "fetch"), moved)
    expect(page.locator("#dirty-flag")).to_be_visible()


def test_auto_layout_is_one_step_of_undo_too(page, people):
    _open(page, people)
    page.get_by_role("button", name="Move steps").click()
    _drag_node(page, "publish", 220, 0)
    moved = _position(page, "publish")
    page.get_by_role("button", name="Auto-layout").click()
    settle(page)
    page.wait_for_timeout(400)
    assert not _near(_position(page, "publish"), moved)
    page.keyboard.press("Control+z")
    settle(page)
    page.wait_for_timeout(400)
    assert _near(_position(page, "publish"), moved)


# Every step's drawn box, against the graph's visible area and the text pane.
VISIBLE = """() => {
  const cy = window.forge.editor.cy;
  const graph = cy.container().getBoundingClientRect();
  const text = document.getElementById('text-view');
  const pane = text.hidden ? null : text.getBoundingClientRect();
  const out = [];
  cy.nodes('[base]').forEach((n) => {
    const b = n.renderedBoundingBox({includeLabels: false});
    const left = graph.left + b.x1, right = graph.left + b.x2;
    const inside = b.x1 >= 0 && b.y1 >= 0 && b.x2 <= cy.width() && b.y2 <= cy.height();
    const underPane = pane ? right > pane.left && left < pane.right : false;
    if (!inside || underPane) out.push(n.id());
  });
  return {hidden: out, width: cy.width(), count: cy.nodes('[base]').length};
}"""


def test_the_split_view_fits_the_graph_beside_the_text(page, people):
    _open(page, people, _wide_plan(), name="Wide")
    whole = page.evaluate(VISIBLE)
    assert whole["count"] == 15

    page.keyboard.press("s")
    expect(page.locator("#text-view")).to_be_visible()
    settle(page)
    split = page.evaluate(VISIBLE)
    assert split["width"] < whole["width"] * 0.6
    assert split["hidden"] == [], f"steps cut off or under the text: {split['hidden']}"
    shoot(page, "split-fitted")

    page.get_by_role("button", name="Graph").click()
    expect(page.locator("#text-view")).to_be_hidden()
    settle(page)
    back = page.evaluate(VISIBLE)
    assert back["hidden"] == [] and back["width"] > split["width"] * 1.6
    shoot(page, "graph-again")


def test_a_yaml_comment_survives_the_graph_s_edits(page, people):
    _open(page, people)
    page.keyboard.press("s")  # split: graph and text
    expect(page.locator("#text-view .CodeMirror")).to_be_visible()
    text = text_value(page)
    commented = text.replace(
        "  - id: publish\n", "  # publish last: the release server is slow\n  - id: publish\n"
    ).replace("goal: ", "# Reviewed with grace on Monday\ngoal: ", 1)
    assert commented != text
    type_text(page, commented)
    page.wait_for_timeout(600)  # the text is read 400 ms after the last keystroke

    # A graph edit: a dependency drawn, and a description typed in the step panel.
    drag_between(page, "template", "publish")
    settle(page)
    click_node(page, "publish")
    page.fill("[data-field=description]", "Write the release notes file, reviewed")
    # The text follows the graph's edits on its own clock: wait for this one to reach it
    # (data-compile may still say "done" for the edit before, on a loaded machine).
    page.wait_for_function(f"() => ({TEXT_VALUE})().includes('notes file, reviewed')")
    wait_compiled(page)
    after = text_value(page)
    assert "# publish last: the release server is slow\n  - id: publish" in after
    assert "# Reviewed with grace on Monday" in after
    assert "reviewed" in after and "template" in after.split("id: publish")[1]
    shoot(page, "comment-kept")
    # A version stores the plan, not its text: saving says so.
    page.get_by_role("button", name="Save version").click()
    expect(page.locator("#save-dialog .save-summary")).to_contain_text(
        "comments in the YAML text stay in this editor only"
    )
    page.locator("#save-dialog [data-close]").click()

    # JSON has no comments; back in YAML they are there again.
    page.get_by_role("button", name="JSON").click()
    page.get_by_role("button", name="YAML").click()
    assert "# publish last: the release server is slow" in text_value(page)

    # Deleting the step the comment is about would drop it: the editor asks first.
    page.get_by_role("button", name="Split").click()
    asked = []

    def refuse(dialog):
        asked.append(dialog.message)
        dialog.dismiss()

    page.once("dialog", refuse)
    click_node(page, "publish")
    page.keyboard.press("Delete")
    assert asked and "publish last: the release server is slow" in asked[0]
    assert "publish" in [s["id"] for s in _document(page)["steps"]]
    assert "# publish last" in text_value(page)

    page.once("dialog", lambda dialog: dialog.accept())
    click_node(page, "publish")
    page.keyboard.press("Delete")
    settle(page)
    assert "publish" not in [s["id"] for s in _document(page)["steps"]]
    assert "# publish last" not in text_value(page)
    assert "# Reviewed with grace on Monday" in text_value(page)
    shoot(page, "comment-asked")


SELECTED = """() => {
  const cy = window.forge.editor.cy;
  const picked = cy.nodes(':selected');
  if (picked.length !== 1) return {ids: picked.map((n) => n.id())};
  const p = picked.renderedPosition();
  return {ids: [picked.id()], x: p.x / cy.width(), y: p.y / cy.height(), zoom: cy.zoom()};
}"""


def _centred_on(page, node_id):
    # The view glides to the step in 250 ms; on a busy machine its frames come late, so
    # wait (up to 5 s) for the glide to end rather than a fixed time.
    found = page.evaluate(SELECTED)
    for _ in range(50):
        page.wait_for_timeout(100)
        found, before = page.evaluate(SELECTED), found
        if found == before and not page.evaluate("window.forge.editor.cy.animated()"):
            break
    assert found["ids"] == [node_id]
    assert 0.4 < found["x"] < 0.6 and 0.4 < found["y"] < 0.6, found
    assert found["zoom"] >= 0.79, found
    return found


def test_search_finds_a_step_in_a_300_step_plan_centres_and_selects_it(page, people):
    _open(page, people, _big_plan(), name="Batch")
    assert page.evaluate("window.forge.editor.cy.nodes('[base]').length") == 300

    page.keyboard.press("/")
    box = page.locator("#search-input")
    expect(box).to_be_focused()
    box.fill("s27_4")
    _centred_on(page, "s27_4")
    expect(page.locator("#search-count")).to_have_text("1 of 1")
    shoot(page, "found-by-id")

    box.fill("stage 12")  # descriptions too: ten steps
    _centred_on(page, "s12_0")
    expect(page.locator("#search-count")).to_have_text("1 of 10")
    box.press("Enter")
    _centred_on(page, "s12_1")
    expect(page.locator("#search-count")).to_have_text("2 of 10")
    box.press("Shift+Enter")
    box.press("Shift+Enter")
    _centred_on(page, "s12_9")  # wraps around
    shoot(page, "found-by-description")

    box.fill("no such step")
    expect(page.locator("#search-count")).to_have_text("No step found")
    box.press("Escape")
    expect(page.locator("#search-box")).to_be_hidden()

    # Ctrl+F opens it too, even from a field of the side panel.
    click_node(page, "s12_9")
    page.locator("[data-field=description]").focus()
    page.keyboard.press("Control+f")
    expect(box).to_be_focused()
    box.fill("s3_3")
    _centred_on(page, "s3_3")
    page.keyboard.press("?")  # typed into the search box, not a shortcut
    expect(page.locator("#help-dialog")).to_be_hidden()


def test_the_help_lists_the_search(page, people):
    _open(page, people)
    page.keyboard.press("?")
    item = page.locator("#help-dialog .shortcut[data-action=search]")
    expect(item).to_contain_text("Find a step")
    expect(item.locator("kbd")).to_have_text(["Ctrl+F", "/"])
