"""References typed or picked in the argument form (issue 25, item 6): a value taken from
an earlier step is shown as a reference (a chip), made with a picker that offers only
the steps the compiler accepts and the paths their outputs declare, read as a reference
when typed as JSON, and the form, "Edit as JSON" and the YAML text agree after every edit.

Item 6 as it was: typing {"$from": "score", "path": "risk"} into a field stored a string;
after "Edit as JSON" the field still showed the old text.
"""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from forge.plan import from_data
from plans import services

from .conftest import shoot
from .graph import click_node, settle, text_value, type_text, wait_compiled, wait_ready

pytestmark = pytest.mark.django_db(transaction=True)

PLAN = {
    "goal": "Score the changelog and publish the notes",
    "deliverable": "after",
    "steps": [
        {
            "id": "read",
            "description": "Read the changelog",
            "depends_on": [],
            "tool": "file_read",
            "args": {"path": "CHANGELOG.txt"},
        },
        {
            "id": "score",
            "description": "Score the risk of the release",
            "depends_on": ["read"],
            "tool": "echo",
            "args": {"risk": "low", "notes": {"lines": [1]}},
        },
        {
            "id": "other",
            "description": "An unrelated step",
            "depends_on": [],
            "tool": "noop",
        },
        {
            "id": "count",
            "description": "Count the changelog entries with wc",
            "depends_on": ["read"],
            "tool": "shell",
            "args": {"argv": ["wc", "-l", {"$from": "read", "path": "path"}]},
        },
        {
            "id": "publish",
            "description": "Publish the release notes",
            "depends_on": ["score"],
            "tool": "file_write",
            "args": {
                "path": "NOTES.md",
                "content": {"$join": ["# 2.4\n\n", {"$from": "read", "path": "content"}]},
            },
        },
        {
            "id": "after",
            "description": "After publishing",
            "depends_on": ["publish"],
            "tool": "noop",
        },
    ],
}


def _open(page, people):
    ada = people.make("ada", "author")
    version = services.create_plan(ada, "Notes", from_data(PLAN))
    people.login(page, ada)
    page.goto(f"/plans/{version.plan_id}/edit/")
    wait_ready(page)
    settle(page)
    return version


def _args(page, step_id):
    steps = page.evaluate("window.forge.editor.store.document")["steps"]
    return next(step for step in steps if step["id"] == step_id).get("args", {})


def _field(page, name):
    return page.locator(f".args-form .arg[data-arg={name}]")


def _options(locator):
    return locator.evaluate_all("items => items.map(o => o.value)")


def test_the_picker_offers_earlier_steps_and_their_output_paths_and_makes_a_reference(page, people):
    _open(page, people)
    click_node(page, "publish")

    # A $join is shown as its parts: the text, and a chip for the value from read.
    content = _field(page, "content")
    expect(content.locator(".parts[data-parts=join]")).to_be_visible()
    expect(content.locator(".ref-chip")).to_have_text("from step read · content×")
    assert content.locator("textarea.part-text").input_value() == "# 2.4\n\n"
    expect(content.locator("textarea.mono")).to_have_count(0)  # no JSON in a text box

    path = _field(page, "path")
    path.locator(".ref-pick").click()
    picker = path.locator(".ref-picker")
    expect(picker).to_be_visible()
    expect(path).not_to_contain_text("null")
    # Only ancestors: not publish itself, not "after" (a descendant), not "other" or
    # "count" (unrelated), in the plan's order.
    assert _options(picker.locator("select[name=ref-step] option")) == ["read", "score"]
    picker.locator("select[name=ref-step]").select_option("score")
    # score is an echo step: its output is its own arguments.
    assert _options(picker.locator("datalist option")) == [
        "risk",
        "notes",
        "notes.lines",
        "notes.lines.0",
    ]
    picker.locator("select[name=ref-step]").select_option("read")
    assert _options(picker.locator("datalist option")) == ["path", "content"]
    expect(picker.locator(".ref-about")).to_contain_text("file_read's output holds: path, content")
    shoot(page, "picker")
    picker.locator("input[name=ref-path]").fill("content")
    picker.get_by_role("button", name="Use").click()

    expect(path.locator(".ref-chip")).to_have_text("from step read · content×")
    expect(path.locator("input[name=path]")).to_have_count(0)
    assert _args(page, "publish")["path"] == {"$from": "read", "path": "content"}
    shoot(page, "chip")

    # Edit as JSON shows it; an edit there redraws the field, and back again.
    page.locator(".raw-args summary").click()
    raw = page.locator(".args-form textarea[name=args-json]")
    assert json.loads(raw.input_value())["path"] == {"$from": "read", "path": "content"}
    edited = json.loads(raw.input_value())
    edited["path"] = {"$from": "score", "path": "risk"}
    raw.fill(json.dumps(edited, indent=2))
    expect(path.locator(".ref-chip")).to_have_text("from step score · risk×")
    edited["path"] = "OUT.md"
    raw.fill(json.dumps(edited, indent=2))
    expect(path.locator("input[name=path]")).to_have_value("OUT.md")
    page.locator(".raw-args summary").click()  # closed: the form shows the new value
    expect(path.locator("input[name=path]")).to_have_value("OUT.md")
    assert _args(page, "publish")["path"] == "OUT.md"

    # A reference typed into a text field is a reference, not text.
    path.locator("input[name=path]").fill('{"$from": "score", "path": "risk"}')
    expect(path.locator(".ref-chip")).to_have_text("from step score · risk×")
    assert _args(page, "publish")["path"] == {"$from": "score", "path": "risk"}
    page.locator(".raw-args summary").click()
    assert json.loads(raw.input_value())["path"] == {"$from": "score", "path": "risk"}
    wait_compiled(page)
    shoot(page, "typed-reference")

    # The YAML text says the same; an edit of the text redraws the chip.
    page.get_by_role("button", name="Split").click()
    text = text_value(page)
    assert "$from: score" in text and "path: risk" in text
    type_text(page, text.replace("path: risk", "path: notes"))
    expect(_field(page, "path").locator(".ref-chip")).to_have_text("from step score · notes×")
    assert _args(page, "publish")["path"] == {"$from": "score", "path": "notes"}

    # Removed: back to an empty text field, and out of the arguments.
    _field(page, "path").locator(".ref-remove").click()
    expect(_field(page, "path").locator("input[name=path]")).to_have_value("")
    assert "path" not in _args(page, "publish")
    page.wait_for_timeout(300)
    assert "$from: score" not in text_value(page)
    shoot(page, "removed")


def test_a_list_holding_a_reference_is_edited_part_by_part(page, people):
    _open(page, people)
    click_node(page, "count")
    argv = _field(page, "argv")
    expect(argv.locator(".parts[data-parts=list] .part")).to_have_count(3)
    assert _options(argv.locator("input.part-text")) == ["wc", "-l"]
    expect(argv.locator(".ref-chip")).to_have_text("from step read · path×")

    argv.get_by_role("button", name="+ from a step…").click()
    picker = argv.locator(".ref-picker")
    assert _options(picker.locator("select[name=ref-step] option")) == ["read"]
    picker.locator("input[name=ref-path]").fill("content")
    picker.locator("input[name=ref-path]").press("Enter")
    expect(argv.locator(".ref-chip")).to_have_count(2)
    assert _args(page, "count")["argv"] == [
        "wc",
        "-l",
        {"$from": "read", "path": "path"},
        {"$from": "read", "path": "content"},
    ]
    # what the step takes, listed above the tool, follows
    expect(page.locator(".step-panel .data-in li")).to_have_count(2)
    argv.locator("input.part-text").nth(1).fill("-w")
    assert _args(page, "count")["argv"][1] == "-w"
    shoot(page, "list-parts")


def test_a_step_that_depends_on_nothing_is_told_why_it_can_take_nothing(page, people):
    _open(page, people)
    click_node(page, "read")
    path = _field(page, "path")
    path.locator(".ref-pick").click()
    expect(path.locator(".ref-none")).to_contain_text("depends on no earlier step")
    expect(path.locator("select[name=ref-step]")).to_have_count(0)
    path.get_by_role("button", name="Cancel").click()
    expect(path.locator(".ref-picker")).to_have_count(0)
    assert _args(page, "read") == {"path": "CHANGELOG.txt"}
