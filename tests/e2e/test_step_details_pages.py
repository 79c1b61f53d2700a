"""What an approver sees of each step, in Chromium, on the three pages that ask for a
decision: the version page, the approval queue's cards and a run's replan view. Every
step's tool, arguments (a value from another step as a reference: its step, its path,
the operator as written), done_when checks, timeout and rollback hint (or that it has
none) without opening an export or clicking; selecting a node highlights its step's
entry and the other way round; a 90-character description reads whole, in the entry, on
the node (wrapped, not cut) and as its tooltip. Screenshots go to
test-artifacts/e2e/<test>/."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from forge.plan import from_data
from plans import services as plan_services
from runs import services
from tests.web.runs_helpers import approved_version, drain

from .conftest import shoot
from .graph import click_node

pytestmark = pytest.mark.django_db(transaction=True)

GOAL = "Publish the release notes"
LONG = "Summarise every supplier contract signed this quarter into one table for the board reviews"
READ = {
    "id": "read",
    "description": LONG,
    "tool": "echo",
    "args": {"content": "Fixed the login page\nSped up the search"},
    "done_when": {"required_keys": ["content"], "checks": ["length(content) > `0`"]},
    "timeout_s": 15,
    "rollback_hint": "nothing to undo: it only reads",
}
PUBLISH = {
    "id": "publish",
    "description": "Write the release notes file",
    "tool": "file_write",
    "args": {
        "path": "NOTES.md",
        "content": {"$join": ["# 2.4\n\n", {"$from": "read", "path": "content"}]},
    },
    "depends_on": ["read"],
    "done_when": {"required_keys": ["path"], "checks": ["committed == `true`"]},
    "timeout_s": 20,
    "rollback_hint": "git checkout NOTES.md",
}
ANNOUNCE = {
    "id": "announce",
    "description": "Tell the team where the notes are",
    "tool": "echo",
    "args": {"to": "team", "where": {"$from": "publish", "path": "path"}},
    "depends_on": ["publish"],
}
STEPS = [READ, PUBLISH, ANNOUNCE]
GUARDED = {"requires_approval_before": ["file_write"]}
# What each entry must show: tool, done_when checks, timeout and rollback (or their absence).
EXPECTED = {
    "read": ("echo", "length(content) > `0`", "15 s", "nothing to undo: it only reads"),
    "publish": ("file_write", "committed == `true`", "20 s", "git checkout NOTES.md"),
    "announce": ("echo", "no done_when", "no timeout_s", "no rollback hint"),
}
QUEUE_NODE_POINT = """([key, id]) => {
  const cy = window.forge.review.graphs.get(key).cy;
  const p = cy.getElementById(id).renderedPosition();
  const box = cy.container().getBoundingClientRect();
  return {x: box.left + p.x, y: box.top + p.y};
}"""


def shoot_page(page, name):
    page.screenshot(path=str(page.artifacts / f"{name}.png"), full_page=True)


@pytest.fixture(autouse=True)
def workspaces(settings, tmp_path):
    settings.FORGE_WORKSPACES = str(tmp_path / "workspaces")


def entry(scope, step_id):
    return scope.locator(f".step-entry[data-step='{step_id}']")


def field(scope, step_id, name):
    return entry(scope, step_id).locator(f"dd[data-field='{name}']")


def expect_every_step_readable(scope):
    """Each step's tool, checks, timeout and rollback, and publish's raw $from."""
    for step_id, (tool, checks, timeout, rollback) in EXPECTED.items():
        expect(field(scope, step_id, "tool")).to_have_text(tool)
        expect(field(scope, step_id, "done_when")).to_contain_text(checks)
        expect(field(scope, step_id, "timeout_s")).to_contain_text(timeout)
        expect(field(scope, step_id, "rollback_hint")).to_contain_text(rollback)
    content = field(scope, "publish", "args").locator(".step-arg[data-arg='content']")
    expect(content.locator(".arg-shown")).to_have_text('"# 2.4\\n\\n" + {read.content}')
    expect(content.locator(".arg-raw")).to_contain_text('"$from": "read", "path": "content"')
    expect(content.locator(".arg-refs")).to_contain_text(
        "content (part 1 of its $join) ← step read, path content"
    )
    expect(field(scope, "announce", "rollback_hint")).to_have_class("absent")
    expect(field(scope, "publish", "approval")).to_contain_text("pauses for a person's approval")
    expect(field(scope, "read", "approval")).to_have_text("does not pause for approval")
    expect(field(scope, "read", "description")).to_have_text(LONG)


def test_the_version_page_shows_every_steps_details_beside_the_graph(page, people):
    ada = people.make("ada", "author")
    grace = people.make("grace", "approver")
    version = plan_services.create_plan(
        ada, "Release notes", from_data({"goal": GOAL, **GUARDED, "steps": STEPS})
    )
    people.login(page, grace)

    page.goto(f"/plans/{version.plan_id}/versions/1/")
    page.wait_for_selector("#step-table[data-state=ready]")
    page.evaluate("window.forge.graph.ready.then(() => true)")
    table = page.locator("#step-table")
    expect(table.locator(".step-entry")).to_have_count(3)
    expect_every_step_readable(table)
    # A text of several lines reads as text, with how many lines it has.
    text = field(table, "read", "args").locator(".step-arg[data-arg='content']")
    expect(text.locator("pre.arg-shown.text")).to_have_text(READ["args"]["content"])
    expect(text).to_contain_text("text of 2 lines, shown as it reads")
    # Without a run, a value from another step is said to come from it at run time.
    expect(
        field(table, "publish", "args").locator(".arg-value[data-state=runtime]")
    ).to_contain_text("comes from step read at run time")
    shoot(page, "1-version-steps")

    # The 90-character description: whole in the entry, wrapped (not cut) on the node,
    # and whole in the graph's tooltip.
    label = page.evaluate("window.forge.graph.cy.getElementById('read').data('label')")
    assert "…" not in label
    assert " ".join(label.split("\n")[1:-1]) == LONG
    point = page.evaluate(
        """() => { const cy = window.forge.graph.cy; const p = cy.getElementById('read')
        .renderedPosition(); const b = cy.container().getBoundingClientRect();
        return {x: b.left + p.x, y: b.top + p.y}; }"""
    )
    page.mouse.move(point["x"], point["y"])
    expect(page.locator("#graph")).to_have_attribute("title", f"read\n{LONG}\n⚙ echo")
    shoot(page, "1b-tooltip")

    # Selecting a node highlights its entry; the step's threads follow the selection.
    click_node(page, "announce")
    expect(entry(table, "announce")).to_have_class("step-entry selected")
    expect(page.locator("#threads-list section.threads[data-step='announce']")).to_be_visible()
    shoot(page, "2-node-selected")

    # Choosing an entry selects its node (and its threads).
    entry(table, "publish").locator("button.step-select").click()
    selected = page.evaluate("window.forge.graph.cy.nodes(':selected').map((n) => n.id())")
    assert selected == ["publish"]
    expect(entry(table, "publish")).to_have_class("step-entry selected")
    expect(entry(table, "announce")).not_to_have_class("step-entry selected")
    expect(page.locator("#threads-list section.threads[data-step='publish']")).to_be_visible()
    shoot_page(page, "3-version-whole")


def test_the_queue_card_shows_every_steps_details_without_opening_anything(page, people):
    ada = people.make("ada", "author", "operator")
    grace = people.make("grace", "approver")
    ben = people.make("ben", "approver")
    waiting = approved_version(ada, ben, STEPS, goal=GOAL, **GUARDED)
    run = services.start_run(waiting, ada)
    drain()
    run.refresh_from_db()
    assert run.status == "awaiting_approval"
    version = plan_services.create_plan(
        ada, "Release notes again", from_data({"goal": GOAL, **GUARDED, "steps": STEPS})
    )
    people.login(page, grace)

    page.goto("/review/")
    page.wait_for_selector("#review-page[data-state=ready]")
    key = f"version-{version.pk}"
    card = page.locator(f"article[data-key='{key}']")
    table = card.locator(f"[data-steps-for='{key}']")
    expect(card.locator(".mini-graph")).to_be_hidden()  # nothing opened
    expect(table.locator(".step-entry")).to_have_count(3)
    expect_every_step_readable(table)
    card.scroll_into_view_if_needed()
    shoot(page, "1-version-card")

    # With the graph open, a node selected highlights its entry.
    card.locator("[data-action=toggle-graph]").click()
    page.evaluate("(key) => window.forge.review.graphs.get(key).ready", key)
    point = page.evaluate(QUEUE_NODE_POINT, [key, "publish"])
    page.mouse.click(point["x"], point["y"])
    expect(entry(table, "publish")).to_have_class("step-entry selected")
    entry(table, "announce").locator("button.step-select").click()
    selected = page.evaluate(
        "(key) => window.forge.review.graphs.get(key).cy.nodes(':selected').map((n) => n.id())",
        key,
    )
    assert selected == ["announce"]
    shoot(page, "2-version-card-selected")

    # The run's waiting step: the value its $join resolves to in this run.
    step_key = f"step-{run.pk}-publish"
    step_card = page.locator(f"article[data-key='{step_key}']")
    step_table = step_card.locator(f"[data-steps-for='{step_key}']")
    content = field(step_table, "publish", "args").locator(".step-arg[data-arg='content']")
    expect(content.locator(".arg-raw")).to_contain_text('"$from": "read", "path": "content"')
    expect(content.locator(".arg-value[data-state=known]")).to_contain_text(
        '"# 2.4\\n\\nFixed the login page\\nSped up the search"'
    )
    expect(field(step_table, "publish", "rollback_hint")).to_have_text("git checkout NOTES.md")
    step_card.scroll_into_view_if_needed()
    shoot(page, "3-step-card")
    shoot_page(page, "4-queue-whole")


def test_the_replan_page_shows_every_steps_details_with_the_runs_values(page, people):
    ada = people.make("ada", "author", "operator")
    grace = people.make("grace", "approver")
    score = {
        "id": "score",
        "description": "Score the late deliveries",
        "tool": "echo",
        "args": {"late": {"$from": "fetch", "path": "late"}},
        "depends_on": ["fetch"],
        "done_when": {"required_keys": ["late"], "checks": ["late <= `5`"]},
        "rollback_hint": "nothing to undo",
    }
    fetch = {"id": "fetch", "description": LONG, "tool": "echo", "args": {"late": 7}}
    version = approved_version(ada, grace, [fetch, score], goal=GOAL)
    run = services.start_run(version, ada)
    drain()
    run.refresh_from_db()
    assert run.status == "needs_replan"
    people.login(page, grace)

    page.goto(f"/runs/{run.pk}/replans/")
    page.wait_for_selector("#replan-page[data-state=ready]")
    table = page.locator("#step-table")
    expect(table.locator(".step-entry")).to_have_count(2)
    expect(field(table, "score", "tool")).to_have_text("echo")
    expect(field(table, "score", "done_when")).to_contain_text("late <= `5`")
    expect(field(table, "score", "timeout_s")).to_contain_text("no timeout_s")
    expect(field(table, "score", "rollback_hint")).to_have_text("nothing to undo")
    expect(field(table, "fetch", "rollback_hint")).to_have_text("no rollback hint")
    late = field(table, "score", "args").locator(".step-arg[data-arg='late']")
    expect(late.locator(".arg-shown")).to_have_text("{fetch.late}")
    expect(late.locator(".arg-raw")).to_contain_text('"$from": "fetch", "path": "late"')
    expect(late.locator(".arg-value[data-state=known] pre")).to_have_text("7")
    expect(entry(table, "score").locator(".step-mark")).to_contain_text("failed")
    expect(field(table, "fetch", "description")).to_have_text(LONG)

    # A node selected: its entry highlighted, and the side panel shows the same details.
    click_node(page, "score")
    expect(entry(table, "score")).to_have_class("step-entry selected")
    detail = page.locator("#step-detail")
    expect(detail.locator(".step-arg[data-arg='late'] .arg-value")).to_contain_text("7")
    label = page.evaluate("window.forge.replan.cy.getElementById('fetch').data('label')")
    assert LONG.split()[-1] in label and "…" not in label
    shoot(page, "1-replan-steps")
    shoot_page(page, "2-replan-whole")
