"""The issue's "done when", in the browser: import seed 003's example, break it and see the
break painted, fix it, save, and have another person approve it."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect

from plans.models import Plan, VersionStatus

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

SEED = Path(__file__).resolve().parents[2] / "examples" / "agent-step-in-chinese.json"


def test_seed_003_is_imported_broken_fixed_saved_and_approved_by_someone_else(page, people):
    ada = people.make("ada", "author", "approver")  # may approve, but not her own work
    grace = people.make("grace", "approver")
    people.login(page, ada)

    # Import the seed's example file unchanged.
    page.goto("/plans/new/")
    page.wait_for_selector("#new-plan[data-ready]")
    page.set_input_files("#plan-file", str(SEED))
    expect(page.locator("#check-summary")).to_have_attribute("data-state", "ok")
    expect(page.locator("#problems li[data-code=unverifiable_done_when]")).to_have_count(1)
    page.fill("#plan-name", "Supplier risk")
    shoot(page, "1-import")
    page.get_by_role("button", name="Create plan").click()
    wait_ready(page)
    assert page.evaluate("window.forge.editor.cy.nodes().map(n => n.id())") == ["s1"]
    assert problems(page) == [("unverifiable_done_when", "s1")]
    expect(page.locator("#compile-state")).to_have_text("Compiles")

    # Break it in the YAML view: s1 now depends on a step that does not exist.
    page.get_by_role("button", name="YAML", exact=True).click()
    yaml = text_value(page)
    assert "depends_on: []" in yaml
    type_text(page, yaml.replace("depends_on: []", "depends_on: [gather]"))
    wait_compiled(page)
    expect(page.locator("#problems li[data-code=missing_dependency]")).to_have_attribute(
        "data-nodes", "s1 gather"
    )
    page.get_by_role("button", name="Graph", exact=True).click()
    settle(page)
    assert {"ghost", "error"} <= set(classes(page, "ghost:gather"))
    assert {"dangling", "error"} <= set(classes(page, "gather>s1"))
    expect(page.locator("#approve-button")).to_be_disabled()
    shoot(page, "2-broken")

    # Fix it: remove the dangling dependency with the mouse and the Delete key, and make
    # the step's done_when verifiable.
    click_node(page, "ghost:gather")
    page.keyboard.press("Delete")
    wait_compiled(page)
    assert page.evaluate("window.forge.editor.cy.elements().map(e => e.id())") == ["s1"]
    click_node(page, "s1")
    page.fill("[data-field='done_when.required_keys']", "facts")
    page.fill("[data-field='done_when.checks']", "length(facts) > `0`")
    wait_compiled(page)
    assert problems(page) == []
    expect(page.locator("#problems")).to_contain_text("No problems")
    shoot(page, "3-fixed")

    # Save: version 2 asks for review. Its author cannot approve it.
    page.keyboard.press("Control+s")
    page.fill("#save-note", "Verifiable contract for s1")
    page.locator("#save-dialog button[type=submit]").click()
    expect(page.locator("#version-label")).to_have_text("v2")
    expect(page.locator("#status-badge")).to_have_text("Awaiting approval")
    expect(page.locator("#approve-button")).to_be_disabled()
    assert page.locator("#approve-button").get_attribute("title") == (
        "Another approver must review your version"
    )
    plan = Plan.objects.get(name="Supplier risk")
    v2 = plan.versions.get(number=2)
    assert v2.document["steps"][0]["done_when"] == {
        "description": "合同和采购摘要已形成结构化 facts",
        "required_keys": ["facts"],
        "checks": ["length(facts) > `0`"],
    }
    page.goto(f"/plans/{plan.pk}/versions/2/")
    expect(page.locator("#review-blocked")).to_contain_text("someone else must review it")

    # Grace, an approver who did not write it, approves it with a comment.
    people.logout(page)
    people.login(page, grace)
    page.goto(f"/plans/{plan.pk}/versions/2/")
    page.wait_for_selector("#graph canvas")
    page.fill("#review-comment", "Checked the contract: fine.")
    page.get_by_role("button", name="Approve").click()
    expect(page.locator("#status-badge")).to_have_text("Approved")
    expect(page.locator(".approvals li[data-decision=approved]")).to_contain_text(
        "Checked the contract: fine."
    )
    v2.refresh_from_db()
    assert v2.status == VersionStatus.APPROVED
    assert [(a.reviewer.username, a.decision) for a in v2.approvals.all()] == [
        ("grace", "approved")
    ]
    shoot(page, "4-approved")


def test_a_mermaid_flowchart_pasted_in_becomes_a_plan(page, people):
    people.login(page, people.make("ada", "author"))
    page.goto("/plans/new/")
    page.wait_for_selector("#new-plan[data-ready]")
    page.select_option("#plan-format", "mermaid")
    page.fill(
        "#plan-source", "flowchart TD\n  fetch[Fetch the data] --> report[Write the report]\n"
    )
    expect(page.locator("#check-summary")).to_have_attribute("data-state", "error")
    page.fill("#plan-name", "From Mermaid")
    page.get_by_role("button", name="Create plan").click()
    wait_ready(page)
    edges = page.evaluate("window.forge.editor.cy.edges().map(e => e.id())")
    assert edges == ["fetch>report"]
    assert Plan.objects.get(name="From Mermaid").latest_version.source_format == "mermaid"


DECISION = """\
flowchart TD
    fetch[Fetch the supplier record] --> check{Is the record complete?}
    check -->|yes| score[Score the supplier]
    check -->|no| ask[Ask the supplier for the missing data]
"""


def test_a_mermaid_decision_is_flagged_at_import_and_in_the_editor(page, people):
    # Issue 25, item 8: both branches of a decision run; the author is told so.
    people.login(page, people.make("ada", "author"))
    page.goto("/plans/new/")
    page.wait_for_selector("#new-plan[data-ready]")
    page.select_option("#plan-format", "mermaid")
    page.fill("#plan-source", DECISION)
    warning = page.locator("#problems li.problem[data-code=flattened_decision]")
    expect(warning).to_have_attribute("data-nodes", "check score ask")
    expect(warning).to_have_attribute("data-severity", "warning")
    expect(warning.locator(".problem-message")).to_contain_text(
        "so both of its branches run after it: 'score' (yes) and 'ask' (no)"
    )
    expect(warning.locator(".problem-hint")).to_contain_text("keep the branch that should run")
    page.fill("#plan-name", "Supplier check")
    warning.scroll_into_view_if_needed()
    shoot(page, "1-import-warns")

    page.get_by_role("button", name="Create plan").click()
    wait_ready(page)
    wait_compiled(page)  # the live compile of the document keeps the import's warning
    in_editor = page.locator("#problems li.problem[data-code=flattened_decision]")
    expect(in_editor).to_have_attribute("data-nodes", "check score ask")
    # An agent step without tools yet: its worst problem (an error) gives its colour.
    assert "d-flattened_decision" in classes(page, "check")
    assert "warning" in set(classes(page, "check>score"))
    descriptions = page.evaluate(
        "window.forge.editor.store.document.steps.map(s => [s.id, s.description])"
    )
    assert ["score", "Score the supplier (if Is the record complete?: yes)"] in descriptions
    assert ["ask", "Ask the supplier for the missing data (if Is the record complete?: no)"] in (
        descriptions
    )
    in_editor.click()
    shoot(page, "2-editor-keeps-the-warning")


def test_the_check_says_nothing_compiles_for_an_empty_or_unreadable_paste(page, people):
    # It used to say "No problems: the plan compiles." under "Paste or choose a plan" for
    # blank text, and under "Cannot be read" for text no format reads.
    people.login(page, people.make("ada", "author"))
    page.goto("/plans/new/")
    page.wait_for_selector("#new-plan[data-ready]")
    summary, listed = page.locator("#check-summary"), page.locator("#problems li")

    page.fill("#plan-source", "goal: [unclosed\n")
    expect(summary).to_have_attribute("data-state", "refused")
    expect(summary).to_contain_text("invalid YAML")
    expect(listed).to_have_count(0)

    page.fill("#plan-source", "   \n  \n")
    expect(summary).to_have_text("Paste or choose a plan to check it.")
    expect(summary).not_to_have_attribute("data-state", "refused")
    expect(listed).to_have_count(0)
