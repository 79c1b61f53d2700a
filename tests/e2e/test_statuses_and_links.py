"""Issue 12, problems 6 and 10, in the browser: the plan list shows a plan's approved
version apart from a newer draft; the editor says what is saved apart from what is on
screen; the API docs are a click away from every page, and the site has a favicon."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from forge.plan import from_data
from plans import services

from .conftest import shoot
from .graph import wait_compiled, wait_ready

pytestmark = pytest.mark.django_db(transaction=True)

DOCUMENT = {
    "goal": "Publish the weekly numbers",
    "steps": [
        {"id": "read", "description": "Read the numbers file", "tool": "echo", "args": {"n": 1}},
    ],
}


def test_the_plan_list_and_the_editor_never_mix_up_saved_and_draft_statuses(page, people):
    ada = people.make("ada", "author")
    grace = people.make("grace", "approver")
    version = services.create_plan(ada, "Weekly numbers", from_data(DOCUMENT))
    services.approve(version, grace, "fine")
    broken = {**DOCUMENT, "steps": [{**DOCUMENT["steps"][0], "tool": "no_such_tool"}]}
    services.create_version(version.plan, ada, from_data(broken), submit=False)
    people.login(page, ada)

    page.goto("/plans/")
    row = page.locator(f"tr[data-plan='{version.plan_id}']")
    expect(row.locator("td.approved")).to_have_text(re.compile(r"v1\s+Approved"))
    expect(row.locator("td.latest")).to_have_text(re.compile(r"v2\s+Has errors"))
    shoot(page, "1-plan-list")

    # The editor on the approved version: saved v1 is approved, and this draft compiles;
    # an edit that breaks it changes what the draft says, never what was saved.
    page.goto(f"/plans/{version.plan_id}/edit/?version=1")
    wait_ready(page)
    expect(page.locator("#saved-as")).to_have_text(re.compile(r"Saved v1\s*:\s*Approved"))
    expect(page.locator("#draft-state")).to_have_text("This draft: compiles")
    page.click("[data-action=view-yaml]")
    text = page.locator("#text-source")
    text.fill(text.input_value().replace("tool: echo", "tool: no_such_tool"))
    page.click("[data-action=view-graph]")
    wait_compiled(page)
    expect(page.locator("#draft-state")).to_have_text("This draft: does not compile")
    expect(page.locator("#saved-as")).to_have_text(re.compile(r"Saved v1\s*:\s*Approved"))
    expect(page.locator("#dirty-flag")).to_be_visible()
    shoot(page, "2-saved-approved-draft-broken")


def test_the_api_docs_are_a_click_away_and_the_site_has_a_favicon(page, people):
    people.login(page, people.make("vera", "viewer"))

    page.goto("/accounts/tokens/")
    expect(page.locator("main a", has_text="API docs")).to_have_attribute("href", "/api/v1/docs")
    page.locator("header nav.nav a", has_text="API docs").click()
    page.wait_for_url(re.compile(r".*/api/v1/docs$"))
    page.wait_for_selector(".swagger-ui .info")
    shoot(page, "1-api-docs")

    page.goto("/api/v1/docs/")
    assert page.url.endswith("/api/v1/docs")
    page.goto("/docs")
    assert page.url.endswith("/api/v1/docs")
    icon = page.request.get("/favicon.ico")
    assert icon.status == 200 and icon.body()[:4] == b"\x00\x00\x01\x00"
