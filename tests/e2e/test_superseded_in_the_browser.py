"""Issue 25, items 2 and 4, in Chromium. A planner's v1 is superseded once its author
submits v3 (v2 stayed a draft): the approver's queue offers v3 alone, compared with v1;
v1's page says superseded, links to v3 and offers no Approve; "new run" never offers v1.
And an approver's inbox on her first day shows what others already decided as resolved,
struck through with why, outside the unread count. Screenshots go to
test-artifacts/e2e/<test>/."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from forge.plan import from_data
from plans import services as plan_services
from plans.models import PlanVersion

from .conftest import shoot

pytestmark = pytest.mark.django_db(transaction=True)


def board(n, **fields):
    return from_data({
        "goal": "Publish the quarterly supplier review",
        "requires_approval_before": ["file_write"],
        **fields,
        "steps": [
            {"id": "collect", "description": "Collect the scores", "tool": "echo",
             "args": {"suppliers": n}},
            {"id": "publish", "description": "Write the review", "tool": "file_write",
             "args": {"path": "board/review.md", "content": f"# {n} suppliers\n"},
             "depends_on": ["collect"]},
        ],
    })  # fmt: skip


@pytest.fixture(autouse=True)
def workspaces(settings, tmp_path):
    settings.FORGE_WORKSPACES = str(tmp_path / "workspaces")


def test_only_the_newest_version_waits_and_the_old_one_says_it_was_superseded(page, people):
    ada = people.make("ada", "author")
    grace = people.make("grace", "approver")
    olga = people.make("olga", "operator")
    v1 = plan_services.create_plan(ada, "Board review", board(3), planner="scripted:planner")
    plan_services.create_version(v1.plan, ada, board(4), submit=False, note="draft")
    v3 = plan_services.create_version(v1.plan, ada, board(5), note="five suppliers")
    plan_id = v1.plan_id

    # The approver's queue: v3 alone, compared with v1 (what an approver could have seen).
    people.login(page, grace)
    expect(page.locator("#review-count")).to_have_text("1")
    page.click("#review-link")
    page.wait_for_selector("#review-page[data-state=ready]")
    expect(page.locator("article.review-item")).to_have_count(1)
    card = page.locator(f"article[data-key='version-{v3.pk}']")
    expect(card.locator("h4").first).to_have_text(
        "Changes since v1 (superseded before anyone decided)"
    )
    expect(card.locator(".diff-changes li[data-kind=changed]").first).to_contain_text(
        "args.suppliers: 3 → 5"
    )
    expect(card.get_by_role("button", name="Approve v1")).to_have_count(0)
    shoot(page, "1-queue-offers-v3-only")

    # v1's page: superseded, links to v3, no decision offered.
    page.goto(f"/plans/{plan_id}/versions/1/")
    expect(page.locator("#status-badge")).to_have_text("Superseded")
    banner = page.locator("#superseded")
    expect(banner).to_contain_text("Superseded by v3.")
    expect(page.locator("#review-form")).to_have_count(0)
    expect(page.locator("#approve-button")).to_have_count(0)
    expect(page.locator("#review-blocked")).to_have_text(
        "Superseded by v3: this version can no longer be approved or run."
    )
    expect(page.locator("#run-button")).to_be_disabled()
    shoot(page, "2-v1-superseded")
    banner.get_by_role("link", name="v3").click()
    page.wait_for_url(re.compile(rf".*/plans/{plan_id}/versions/3/$"))
    page.fill("#review-comment", "Five suppliers is right")
    page.click("#approve-button")
    expect(page.locator("#status-badge")).to_have_text("Approved")
    assert PlanVersion.objects.get(pk=v3.pk).status == "approved"

    # "New run" offers v3, never v1, and says why when asked for v1.
    people.logout(page)
    people.login(page, olga)
    page.goto("/runs/new/")
    options = page.locator("#start-version option")
    expect(options).to_have_count(1)
    expect(options).to_have_text("Board review · v3")
    page.goto(f"/runs/new/?plan={plan_id}&version=1")
    expect(page.get_by_text("Board review v1 cannot run: it was superseded by v3.")).to_be_visible()
    expect(page.locator(f"#start-version option[value='{plan_id}:1']")).to_have_count(0)
    shoot(page, "3-new-run")


def test_an_inbox_on_day_one_shows_what_others_decided_as_resolved(page, people):
    ada = people.make("ada", "author")
    grace = people.make("grace", "approver")
    heidi = people.make("heidi", "approver")  # her first day: all of this happened before
    approved = plan_services.create_plan(ada, "Board review", board(3))
    plan_services.approve(approved, grace, "ok")
    sent_back = plan_services.create_plan(ada, "Release notes", board(2))
    plan_services.request_changes(sent_back, grace, "Name the changelog file")
    pricing = plan_services.create_plan(ada, "Pricing", board(1))
    plan_services.create_version(pricing.plan, ada, board(2), note="second try")
    plan_services.create_plan(ada, "Supplier risk", board(4))

    people.login(page, heidi)
    expect(page.locator("#inbox-count")).to_have_text("2")  # Pricing v2, Supplier risk v1
    page.click("#inbox-link")
    page.wait_for_url(re.compile(r".*/inbox/$"))
    expect(page.locator(".inbox-item")).to_have_count(5)
    expect(page.locator(".inbox-item.unread")).to_have_count(2)
    resolved = page.locator(".inbox-item.resolved")
    expect(resolved).to_have_count(3)
    expect(page.locator("#inbox-unread-note")).to_have_text("2 unread")
    for title, why in (
        ("Board review v1 by ada waits for your review", "approved by grace"),
        ("Release notes v1 by ada waits for your review", "changes requested by grace"),
        ("Pricing v1 by ada waits for your review", "superseded by v2"),
    ):
        row = resolved.filter(has_text=title)
        expect(row.locator(".inbox-resolution")).to_contain_text(f"Resolved: {why}")
        expect(row.locator(".inbox-title")).to_have_css("text-decoration-line", "line-through")
        expect(row.locator(".unread-mark")).to_have_count(0)
    shoot(page, "1-day-one-inbox")

    # Someone else approves Supplier risk: on her next look it is resolved too.
    plan_services.approve(PlanVersion.objects.get(plan__name="Supplier risk"), grace, "ok")
    page.reload()
    expect(page.locator("#inbox-count")).to_have_text("1")
    expect(page.locator(".inbox-item.resolved")).to_have_count(4)
    page.click("text=Unread only")
    expect(page.locator(".inbox-item")).to_have_count(1)
    expect(page.locator(".inbox-title")).to_have_text("Pricing v2 by ada waits for your review")
    shoot(page, "2-unread-only")
