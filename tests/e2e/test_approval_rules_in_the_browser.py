"""Approval rules in the browser (SPEC section 10, issue 28): a plan whose step POSTs to
an outside host matches a rule that needs finance; a plain approver approves it from the
queue and the version page then says it waits for finance, as its author's home does; a
finance member (a team shown on her menu) finds it in her queue with what it lacks,
approves it, and it is approved. Screenshots go to test-artifacts/e2e/<test>/.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from accounts import teams
from forge.plan import from_data
from plans import services as plan_services
from plans.models import PlanVersion, VersionStatus
from plans.rules import file_rules

from .conftest import shoot

pytestmark = pytest.mark.django_db(transaction=True)

RULES = """\
schema: forge.rules/v1
rules:
  - id: outbound
    description: Data leaves the company
    when: {side_effect: [external]}
    require: {team: finance, approvals: 1}
  - id: second-pair-of-eyes
    description: Anything that reaches outside is read by two people
    when: {host: ["*.example.com"]}
    require: {approvals: 2}
"""
PLAN = {
    "goal": "Tell the supplier portal the review is done",
    "steps": [
        {"id": "fetch", "description": "Fetch the supplier list", "tool": "file_read",
         "args": {"path": "suppliers.csv"}, "done_when": {"required_keys": ["content"]}},
        {"id": "notify", "description": "Tell the supplier portal the review is done",
         "depends_on": ["fetch"], "tool": "http_request",
         "args": {"method": "POST", "url": "https://api.example.com/reviews", "body": {"q": 3}},
         "rollback_hint": "DELETE the review at api.example.com"},
    ],
}  # fmt: skip


@pytest.fixture
def rules(settings, tmp_path):
    settings.FORGE_HTTP_ALLOWED_HOSTS = ["api.example.com"]
    path = tmp_path / "rules.yaml"
    path.write_text(RULES)
    settings.FORGE_APPROVAL_RULES = str(path)
    file_rules.cache_clear()
    yield
    file_rules.cache_clear()


def card(page, version):
    return page.locator(f"article[data-key='version-{version.pk}']")


def test_an_external_post_waits_for_finance_after_a_plain_approval_then_a_finance_member_approves(
    page, people, rules
):
    ada = people.make("ada", "author")
    grace = people.make("grace", "approver")
    carol = people.make("carol", "approver")
    teams.join_teams(carol, ["finance"], actor="test")
    version = plan_services.create_plan(ada, "Supplier portal", from_data(PLAN))

    # Grace, in no team, can still be the second pair of eyes: the card says what it needs.
    people.login(page, grace)
    page.goto("/review/")
    page.wait_for_selector("#review-page[data-state=ready]")
    grace_card = card(page, version)
    expect(grace_card.locator("tr[data-rule=outbound] .badge")).to_have_text("needs 1 of finance")
    second = "tr[data-rule=second-pair-of-eyes] .badge"
    expect(grace_card.locator(second)).to_have_text("needs 2 people")
    shoot(page, "1-grace-queue")
    grace_card.locator("textarea").fill("The portal should hear about it")
    grace_card.get_by_role("button", name="Approve v1").click()
    expect(grace_card).to_have_count(0)
    expect(page.locator("#toasts .toast").last).to_have_text(
        "Your approval of Supplier portal v1 counts; it still waits: rule outbound needs 1 of "
        "finance; rule second-pair-of-eyes needs 1 more person."
    )
    assert PlanVersion.objects.get(pk=version.pk).status == VersionStatus.AWAITING_APPROVAL

    # The version page says it waits for finance.
    page.goto(f"/plans/{version.plan_id}/versions/1/")
    rules_card = page.locator("#rules")
    expect(rules_card.locator("tr[data-rule=outbound]")).to_have_attribute(
        "data-satisfied", "false"
    )
    expect(rules_card.locator("tr[data-rule=outbound] .badge")).to_have_text("needs 1 of finance")
    expect(rules_card.locator(second)).to_have_text("needs 1 more person")
    expect(rules_card.locator(".not-counted")).to_have_count(0)  # grace counts for one rule
    shoot(page, "2-waiting-for-finance")
    people.logout(page)

    # Ada, who wrote it, reads on her home which team it waits on.
    people.login(page, ada)
    waiting = page.locator("#home-waiting_on_rules li")
    page.goto("/")
    expect(waiting).to_contain_text("Supplier portal v1")
    expect(waiting).to_contain_text("needs 1 of finance")
    shoot(page, "2b-ada-home")
    people.logout(page)

    # Carol, of finance, sees her team on her menu and the version in her queue.
    people.login(page, carol)
    expect(page.locator(".user-teams .team")).to_have_text(["finance"])
    page.goto("/review/")
    page.wait_for_selector("#review-page[data-state=ready]")
    carol_card = card(page, version)
    expect(carol_card.locator("tr[data-rule=outbound] .badge")).to_have_text("needs 1 of finance")
    shoot(page, "3-carol-queue")
    carol_card.locator("textarea").fill("Finance agrees")
    carol_card.get_by_role("button", name="Approve v1").click()
    expect(carol_card).to_have_count(0)

    approved = PlanVersion.objects.get(pk=version.pk)
    assert approved.status == VersionStatus.APPROVED
    page.goto(f"/plans/{version.plan_id}/versions/1/")
    expect(page.locator("#rules tr[data-satisfied=true]")).to_have_count(2)
    expect(page.locator("#rules tr[data-rule=outbound] td").nth(1)).to_have_text("carol")
    shoot(page, "4-approved")
