"""A new step is an agent step that asks for its allowed tools (issue 12, problem 2).

Problem 2 as it was: "+ Add step" and every Mermaid import produced ``unknown_tool`` errors
meaning "no tool chosen yet" while the node said "agent step", and the fix was never
suggested.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from forge.plan import from_data
from plans import services

from .conftest import shoot
from .graph import click_node, problems, settle, wait_compiled, wait_ready

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _reaches_example_com(settings):
    # The plan's first step GETs https://example.com/changelog: this deployment lets
    # http_request reach it (otherwise the step would be host_not_allowed).
    settings.FORGE_HTTP_ALLOWED_HOSTS = ["example.com"]


PLAN = {
    "goal": "Fetch the changelog",
    "steps": [
        {
            "id": "fetch",
            "description": "Fetch the changelog from the release server",
            "depends_on": [],
            "tool": "http_request",
            "args": {"method": "GET", "url": "https://example.com/changelog"},
            "done_when": {"required_keys": ["status"], "checks": ["status == `200`"]},
        }
    ],
}


def test_a_new_step_asks_for_its_allowed_tools_and_says_how(page, people):
    ada = people.make("ada", "author")
    version = services.create_plan(ada, "Release", from_data(PLAN))
    people.login(page, ada)
    page.goto(f"/plans/{version.plan_id}/edit/")
    wait_ready(page)
    click_node(page, "fetch")
    page.locator(".toolbar [data-action=add-step]").click()
    settle(page)
    wait_compiled(page)

    codes = [code for code, nodes in problems(page) if nodes == "step_1"]
    assert "agent_without_tools" in codes
    assert "unknown_tool" not in codes
    item = page.locator("#problems li.problem[data-code=agent_without_tools]")
    expect(item).to_contain_text("agent step")
    expect(item.locator(".problem-hint")).to_contain_text("tools_allowed")
    # The node says what it needs, and the step panel asks for it where it is chosen.
    assert "d-agent_without_tools" in page.evaluate(
        "window.forge.editor.cy.getElementById('step_1').classes()"
    )
    ask = page.locator("#inspector .needs-tools")
    expect(ask).to_be_visible()
    expect(ask).to_contain_text("Choose the tools")
    shoot(page, "new-step")

    # Choosing a tool it may call answers it.
    page.locator("[data-field=tools_allowed] input[value=file_read]").check()
    wait_compiled(page)
    assert "agent_without_tools" not in [code for code, _ in problems(page)]
    expect(page.locator("#inspector .needs-tools")).to_be_hidden()
    assert page.evaluate(
        "window.forge.editor.store.document.steps.find(s => s.id === 'step_1').tools_allowed"
    ) == ["file_read"]


def test_a_mermaid_import_says_which_steps_need_their_tools(page, people):
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
    found = problems(page)
    assert ("agent_without_tools", "fetch") in found
    assert ("agent_without_tools", "report") in found
    assert "unknown_tool" not in [code for code, _ in found]
    expect(
        page.locator("#problems li[data-code=agent_without_tools] .problem-hint").first
    ).to_contain_text("tools_allowed")
