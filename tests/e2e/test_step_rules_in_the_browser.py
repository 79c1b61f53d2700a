"""A step's approval rules in the browser (SPEC section 10, issue 28): a run's step that
writes a file waits for finance. A plain approver is not asked (neither her queue nor her
home lists it), but the run page's drawer shows her who must approve; her approval is
kept like a comment and the drawer says so. A finance member finds the step on her home
and in her queue with the rule and what it lacks, approves it, and it goes on.
Screenshots go to test-artifacts/e2e/<test>/.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from accounts import teams
from forge.plan import from_data
from plans import services as plan_services
from plans.rules import file_rules
from runs import services
from runs.models import StepApproval, StepRun
from tests.web.runs_helpers import drain

from .conftest import shoot

pytestmark = pytest.mark.django_db(transaction=True)

RULES = """\
schema: forge.rules/v1
rules:
  - id: writes
    description: Files change on the board's share
    when: {side_effect: [write]}
    require: {team: finance, approvals: 1}
"""
PLAN = {
    "goal": "Publish the quarterly supplier review to the board folder",
    "requires_approval_before": ["file_write"],
    "steps": [
        {"id": "collect", "description": "Collect the quarter's supplier scores", "tool": "echo",
         "args": {"scores": {"ACME Bearings": 3.1}}},
        {"id": "publish", "description": "Write the review into the board folder",
         "tool": "file_write", "args": {"path": "board/q3.md", "content": "# Q3\n"},
         "depends_on": ["collect"]},
    ],
}  # fmt: skip


@pytest.fixture
def rules(settings, tmp_path):
    settings.FORGE_WORKSPACES = str(tmp_path / "workspaces")
    path = tmp_path / "rules.yaml"
    path.write_text(RULES)
    settings.FORGE_APPROVAL_RULES = str(path)
    file_rules.cache_clear()
    yield
    file_rules.cache_clear()


def test_a_step_waits_for_finance_after_a_plain_approval_then_a_finance_member_approves_it(
    page, people, rules
):
    ada = people.make("ada", "author", "operator")
    grace = people.make("grace", "approver")
    carol = people.make("carol", "approver")
    teams.join_teams(carol, ["finance"], actor="test")
    version = plan_services.create_plan(ada, "Board review", from_data(PLAN))
    plan_services.approve(version, carol, "finance agrees to the plan")
    run = services.start_run(version, ada)
    drain()
    step_key = f"step-{run.pk}-publish"

    # Grace is in no team: the queue does not ask her, the run page tells her who must.
    people.login(page, grace)
    page.goto("/review/")
    page.wait_for_selector("#review-page[data-state=ready]")
    expect(page.locator(f"article[data-key='{step_key}']")).to_have_count(0)
    page.goto("/")
    expect(page.locator("#home-steps")).to_have_attribute("data-count", "0")
    page.goto(f"/runs/{run.pk}/")
    page.wait_for_selector("#run-page[data-state=ready]")
    page.locator("#people-list li[data-step=publish] [data-open-step=publish]").click()
    rules_box = page.locator("#step-drawer [data-field=step-rules]")
    expect(rules_box.locator("tr[data-rule=writes]")).to_have_attribute("data-satisfied", "false")
    expect(rules_box.locator("tr[data-rule=writes] .badge")).to_have_text("needs 1 of finance")
    expect(rules_box.locator(".rule-description")).to_have_text("Files change on the board's share")
    shoot(page, "1-grace-run-page")
    page.fill("#approval-comment", "Reads right to me")
    page.click("#approve-step")
    expect(page.locator("#toasts .toast").last).to_have_text(
        "Your approval of publish counts; it still waits: rule writes needs 1 of finance"
    )
    expect(rules_box.locator(".not-counted .names")).to_have_text("grace")
    expect(rules_box.locator(".not-counted")).to_contain_text("kept like a comment")
    assert StepRun.objects.get(run=run, step_id="publish").status == "awaiting_approval"
    assert StepApproval.objects.get(run=run, step_id="publish").decision == "counted"
    shoot(page, "2-grace-counted")
    page.goto("/")  # the open drawer covers the menu
    people.logout(page)

    # Carol, of finance, finds it on her home and in her queue with the rule; approves it.
    people.login(page, carol)
    page.goto("/")
    expect(page.locator("#home-steps")).to_have_attribute("data-count", "1")
    expect(page.locator("#home-steps li")).to_contain_text(f"Step publish of run #{run.pk}")
    page.goto("/review/")
    page.wait_for_selector("#review-page[data-state=ready]")
    card = page.locator(f"article[data-key='{step_key}']")
    expect(card.locator("tr[data-rule=writes] .badge")).to_have_text("needs 1 of finance")
    expect(card.locator(".not-counted .names")).to_have_text("grace")
    card.scroll_into_view_if_needed()
    shoot(page, "3-carol-queue")
    card.locator("textarea").fill("Finance agrees")
    card.get_by_role("button", name="Approve this call").click()
    expect(card).to_have_count(0)
    assert StepRun.objects.get(run=run, step_id="publish").status != "awaiting_approval"
