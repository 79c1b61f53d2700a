"""Drawing a plan with the mouse: three steps, a cycle painted and listed, removed, saved.
A blank plan is stored only by its first save, once it has steps (issue 12, problem 6)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from plans.models import Plan

from .conftest import shoot
from .graph import (
    classes,
    click_edge,
    drag_between,
    problems,
    settle,
    wait_compiled,
    wait_ready,
)

pytestmark = pytest.mark.django_db(transaction=True)

CYCLE = ["step_1", "step_2", "step_3"]
CYCLE_EDGES = ["step_1>step_2", "step_2>step_3", "step_3>step_1"]


def test_an_author_draws_three_steps_closes_a_cycle_sees_it_removes_it_and_saves(page, people):
    ada = people.make("ada", "author")
    people.login(page, ada)

    # A blank plan, from the plan list.
    page.goto("/plans/")
    page.get_by_role("link", name="New plan or import").click()
    page.wait_for_selector("#new-plan[data-ready]")
    page.get_by_role("tab", name="Start blank").click()
    page.fill("#plan-name", "Drawn with the mouse")
    page.fill("#plan-goal", "Three steps in a row")
    page.get_by_role("button", name="Create plan").click()
    wait_ready(page)
    expect(page.locator("#empty-hint")).to_be_visible()
    # Nothing is stored before a step is drawn, and nothing can be saved.
    assert not Plan.objects.filter(name="Drawn with the mouse").exists()
    expect(page.locator("#saved-as")).to_have_text("Not saved yet")
    expect(page.locator("#save-button")).to_be_disabled()
    expect(page.locator("#save-button")).to_have_attribute(
        "title", "Add a step first: a plan without steps is not saved"
    )
    shoot(page, "0-blank-not-saved")

    # Three steps from the toolbar (with nothing selected, so none depends on another),
    # then two dependencies drawn by dragging.
    for _ in range(3):
        settle(page)
        page.mouse.click(*_empty_corner(page))  # a new step is selected: clear that
        page.locator(".toolbar [data-action=add-step]").click()
    page.mouse.click(*_empty_corner(page))
    settle(page)
    assert page.evaluate("window.forge.editor.cy.edges().length") == 0
    drag_between(page, "step_1", "step_2")
    drag_between(page, "step_2", "step_3")
    wait_compiled(page)
    assert page.evaluate("window.forge.editor.cy.edges().map(e => e.id()).sort()") == [
        "step_1>step_2",
        "step_2>step_3",
    ]
    assert "cycle" not in [code for code, _ in problems(page)]
    shoot(page, "1-chain")

    # Closing the cycle paints its steps and edges red and lists it.
    drag_between(page, "step_3", "step_1")
    wait_compiled(page)
    expect(page.locator("#problems li[data-code=cycle]")).to_have_attribute(
        "data-nodes", "step_1 step_2 step_3"
    )
    for node in CYCLE:
        assert {"cycle", "error"} <= set(classes(page, node))
    for edge in CYCLE_EDGES:
        assert {"cycle", "error"} <= set(classes(page, edge))
    expect(page.locator("#approve-button")).to_be_disabled()
    expect(page.locator("#run-button")).to_be_disabled()
    expect(page.locator("#compile-state")).to_have_text("Does not compile")
    shoot(page, "2-cycle")

    # The problem selects and centres its steps.
    page.locator("#problems li[data-code=cycle]").click()
    selected = page.evaluate("window.forge.editor.cy.nodes(':selected').map(n => n.id()).sort()")
    assert selected == CYCLE

    # Remove the closing dependency: click it, press Delete.
    page.mouse.click(*_empty_corner(page))
    click_edge(page, "step_3>step_1")
    expect(page.locator("#inspector h2")).to_have_text("Dependency")
    page.keyboard.press("Delete")
    wait_compiled(page)
    assert page.locator("#problems li[data-code=cycle]").count() == 0
    assert "cycle" not in classes(page, "step_1")
    shoot(page, "3-cycle-removed")

    # Save: the plan is stored for the first time, as version 1 with a change note.
    expect(page.locator("#save-button")).to_be_enabled()
    page.get_by_role("button", name="Save version").click()
    expect(page.locator("#save-dialog h2")).to_have_text("Save the plan")
    page.fill("#save-note", "Three steps in a row, no cycle")
    page.locator("#save-dialog button[type=submit]").click()
    page.wait_for_url(re.compile(r".*/plans/\d+/edit/$"))
    wait_ready(page)
    expect(page.locator("#version-label")).to_have_text("v1")
    expect(page.locator("#dirty-flag")).to_be_hidden()
    plan = Plan.objects.get(name="Drawn with the mouse")
    [only] = plan.versions.all()
    assert (only.number, only.note, only.parent) == (1, "Three steps in a row, no cycle", None)
    assert only.document["goal"] == "Three steps in a row"
    assert [step["depends_on"] for step in only.document["steps"]] == [
        [],
        ["step_1"],
        ["step_2"],
    ]
    shoot(page, "4-saved-as-v1")

    # The history lists the one version.
    page.get_by_role("link", name="History").click()
    expect(page.locator("table.versions tbody tr")).to_have_count(1)
    expect(page.locator("table.versions tbody tr").first).to_contain_text(
        "Three steps in a row, no cycle"
    )
    assert re.search(r"/plans/\d+/versions/$", page.url)


def _empty_corner(page):
    box = page.locator("#graph").bounding_box()
    return box["x"] + 14, box["y"] + 14
