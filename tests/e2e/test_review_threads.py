"""Review threads in the browser (issue 12, deliver 2 and 3): a reviewer comments on a
step and requests changes; the author sees the comment and the thread in the editor,
fixes the step and saves v2, where the thread reads as outdated. And a draft submitted
for review as it is waits in the queue. Screenshots under test-artifacts/e2e."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from forge.plan import from_data
from plans import services as plan_services
from plans.models import PlanVersion, VersionStatus
from plans.schemas import EXAMPLE_DOCUMENT
from reviews.models import Thread

from .conftest import shoot
from .graph import click_node, settle, wait_compiled, wait_ready

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_reviewer_requests_changes_on_a_step_and_the_thread_goes_outdated_when_fixed(
    page, people
):
    ada = people.make("ada", "author")
    grace = people.make("grace", "approver")
    v1 = plan_services.create_plan(ada, "Release notes", from_data(EXAMPLE_DOCUMENT))
    plan = v1.plan

    # Grace comments on the step "publish" on the version page and requests changes.
    people.login(page, grace)
    page.goto(f"/plans/{plan.pk}/versions/1/")
    page.wait_for_selector("#threads-list[data-state=ready]")
    page.evaluate("window.forge.graph.ready.then(() => true)")
    page.evaluate("() => { window.forge.graph.cy.getElementById('publish').select(); }")
    box = page.get_by_label("Comment on step publish")
    box.fill("Say where the summary is published.")
    page.locator("#threads-list .threads[data-step=publish] [data-thread-action=open]").click()
    thread = page.locator("#threads-list .thread[data-step=publish]")
    expect(thread).to_contain_text("Say where the summary is published.")
    page.fill("#review-comment", "One step needs work: see the thread on publish.")
    page.locator("#request-changes-button").click()
    expect(page.locator("#status-badge")).to_have_text("Changes requested")
    shoot(page, "1-changes-requested")
    assert PlanVersion.objects.get(pk=v1.pk).status == VersionStatus.CHANGES_REQUESTED

    # Ada opens her editor: the banner says why and counts the open thread; the step
    # carries a badge and its panel shows the thread.
    people.logout(page)
    people.login(page, ada)
    page.goto(f"/plans/{plan.pk}/edit/")
    wait_ready(page)
    expect(page.locator("#status-badge")).to_have_text("Changes requested")
    expect(page.locator("#review-decision")).to_contain_text("Changes requested by grace")
    expect(page.locator("#review-decision-comment")).to_have_text(
        "One step needs work: see the thread on publish."
    )
    expect(page.locator("#review-threads-summary")).to_contain_text("1 open review thread")
    expect(page.locator("#run-button")).to_be_disabled()
    settle(page)
    assert page.evaluate("window.forge.editor.cy.getElementById('publish').data('threads')") == 1
    assert page.evaluate("window.forge.editor.cy.getElementById('read').data('threads')") is None
    click_node(page, "publish")
    panel_thread = page.locator("#inspector .thread[data-step=publish]")
    expect(panel_thread).to_have_attribute("data-state", "open")
    expect(panel_thread).to_contain_text("Say where the summary is published.")
    shoot(page, "2-author-sees-the-thread")

    # She answers, fixes the step and saves version 2: the thread is outdated there.
    panel_thread.locator("textarea").fill("It goes to the release channel now.")
    panel_thread.locator("[data-thread-action=reply]").click()
    expect(page.locator("#inspector .thread[data-step=publish] .comment")).to_have_count(2)
    page.fill("[data-field=description]", "Publish the summary to the release channel")
    wait_compiled(page)
    page.keyboard.press("Control+s")
    page.fill("#save-note", "Say where the summary goes")
    page.locator("#save-dialog button[type=submit]").click()
    expect(page.locator("#version-label")).to_have_text("v2")
    expect(page.locator("#status-badge")).to_have_text("Awaiting approval")
    outdated = page.locator("#inspector .thread[data-step=publish]")
    expect(outdated).to_have_attribute("data-state", "outdated")
    expect(outdated).to_contain_text("outdated: the step changed since")
    expect(page.locator("#review-threads-summary")).to_contain_text("1 outdated")
    expect(page.locator("#review-decision")).to_be_hidden()
    assert page.evaluate("window.forge.editor.cy.getElementById('publish').data('threads')") is None
    shoot(page, "3-outdated-on-v2")

    v2 = PlanVersion.objects.get(plan=plan, number=2)
    assert Thread.objects.get().version_id == v1.pk  # carried over, not copied
    page.goto(f"/plans/{plan.pk}/versions/2/")
    page.wait_for_selector("#threads-list[data-state=ready]")
    expect(page.locator("#threads-list .thread[data-step=publish]")).to_have_attribute(
        "data-state", "outdated"
    )
    assert v2.status == VersionStatus.AWAITING_APPROVAL


def test_a_draft_submitted_for_review_from_the_editor_waits_in_the_queue(page, people):
    ada = people.make("ada", "author")
    grace = people.make("grace", "approver")
    draft = plan_services.create_plan(ada, "Draft notes", from_data(EXAMPLE_DOCUMENT), submit=False)

    people.login(page, ada)
    page.goto(f"/plans/{draft.plan_id}/edit/")
    wait_ready(page)
    expect(page.locator("#status-badge")).to_have_text("Draft")
    button = page.locator("#submit-review-button")
    expect(button).to_be_enabled()
    button.click()
    expect(page.locator("#status-badge")).to_have_text("Awaiting approval")
    expect(button).to_be_hidden()
    shoot(page, "1-submitted")
    assert PlanVersion.objects.filter(plan_id=draft.plan_id).count() == 1

    people.logout(page)
    people.login(page, grace)
    page.goto("/review/")
    card = page.locator(f"article[data-kind=version][data-plan='{draft.plan_id}']")
    expect(card).to_have_attribute("data-version", "1")
    expect(card.locator("[data-decision=request-changes]")).to_be_visible()
    shoot(page, "2-in-the-queue")
