"""The team's daily loop end to end, in Chromium (issue 12, "Done when"): an admin adds a
webhook; the author submits a draft; a reviewer comments on a step and requests changes;
the author finds it in the inbox and in the editor, fixes the step, and the thread goes
outdated; a second reviewer approves; the author gets the e-mail and the webhook fires,
signed. Screenshots under test-artifacts/e2e/<test>/."""

from __future__ import annotations

import json
import re

import pytest
from django.core import mail
from playwright.sync_api import expect

from forge.plan import from_data
from forge.webhook_signatures import verify
from plans import services as plan_services
from plans.models import PlanVersion, VersionStatus
from plans.schemas import EXAMPLE_DOCUMENT
from reviews.models import Webhook
from tests.web.runs_helpers import drain
from tests.web.webhook_receiver import webhook_receiver

from .conftest import shoot
from .graph import click_node, settle, wait_compiled, wait_ready

pytestmark = pytest.mark.django_db(transaction=True)

CHANGES = "One step needs work: see the thread on publish."
THREAD = "Say where the summary is published."


def test_submit_comment_request_changes_fix_approve_then_mail_and_webhook(page, people, settings):
    ada = people.make("ada", "author")
    ada.email = "ada@example.com"
    ada.save(update_fields=["email"])
    grace = people.make("grace", "approver")
    ben = people.make("ben", "approver")
    root = people.make("root", "admin")
    draft = plan_services.create_plan(
        ada, "Release notes", from_data(EXAMPLE_DOCUMENT), submit=False
    )
    plan_id = draft.plan_id

    with webhook_receiver() as receiver:
        settings.FORGE_WEBHOOK_ALLOWED_HOSTS = [f"127.0.0.1:{receiver.port}"]

        # An admin adds the team's webhook for approvals.
        people.login(page, root)
        page.goto("/inbox/webhooks/")
        page.fill("#webhook-new input[name=name]", "team")
        page.fill("#webhook-new input[name=url]", receiver.url)
        page.check("#webhook-new input[name=kinds][value=version_approved]")
        page.click("#webhook-new button[type=submit]")
        expect(page.locator("#webhook-list tr[data-webhook]")).to_have_count(1)
        shoot(page, "1-webhook")
        people.logout(page)

        # Ada submits her draft as it is.
        people.login(page, ada)
        page.goto(f"/plans/{plan_id}/edit/")
        wait_ready(page)
        page.locator("#submit-review-button").click()
        expect(page.locator("#status-badge")).to_have_text("Awaiting approval")
        shoot(page, "2-submitted")
        people.logout(page)

        # Grace comments on the step "publish" and requests changes.
        people.login(page, grace)
        page.goto(f"/plans/{plan_id}/versions/1/")
        page.wait_for_selector("#threads-list[data-state=ready]")
        page.evaluate("window.forge.graph.ready.then(() => true)")
        page.evaluate("() => { window.forge.graph.cy.getElementById('publish').select(); }")
        page.get_by_label("Comment on step publish").fill(THREAD)
        page.locator("#threads-list .threads[data-step=publish] [data-thread-action=open]").click()
        expect(page.locator("#threads-list .thread[data-step=publish]")).to_contain_text(THREAD)
        page.fill("#review-comment", CHANGES)
        page.locator("#request-changes-button").click()
        expect(page.locator("#status-badge")).to_have_text("Changes requested")
        shoot(page, "3-changes-requested")
        people.logout(page)

        # Ada sees it in her inbox, with the comment, and opens the version from there.
        people.login(page, ada)
        expect(page.locator("#inbox-count")).not_to_have_text("0")
        page.click("#inbox-link")
        page.wait_for_url(re.compile(r".*/inbox/$"))
        changes = page.locator(".inbox-item.unread", has_text="grace requested changes to")
        expect(changes).to_have_count(1)
        expect(changes.locator(".inbox-comment")).to_have_text(CHANGES)
        shoot(page, "4-inbox")

        # In the editor: the banner, the badge and the thread; she fixes the step.
        page.goto(f"/plans/{plan_id}/edit/")
        wait_ready(page)
        expect(page.locator("#review-decision-comment")).to_have_text(CHANGES)
        settle(page)
        click_node(page, "publish")
        thread = page.locator("#inspector .thread[data-step=publish]")
        expect(thread).to_contain_text(THREAD)
        page.fill("[data-field=description]", "Publish the summary to the release channel")
        wait_compiled(page)
        page.keyboard.press("Control+s")
        page.fill("#save-note", "Say where the summary goes")
        page.locator("#save-dialog button[type=submit]").click()
        expect(page.locator("#version-label")).to_have_text("v2")
        expect(page.locator("#inspector .thread[data-step=publish]")).to_have_attribute(
            "data-state", "outdated"
        )
        shoot(page, "5-fixed-thread-outdated")
        people.logout(page)

        # Ben, a second reviewer, approves version 2.
        people.login(page, ben)
        page.goto(f"/plans/{plan_id}/versions/2/")
        page.fill("#review-comment", "The step says where it publishes now.")
        page.locator("#approve-button").click()
        expect(page.locator("#status-badge")).to_have_text("Approved")
        shoot(page, "6-approved")

        v2 = PlanVersion.objects.get(plan_id=plan_id, number=2)
        assert v2.status == VersionStatus.APPROVED
        drain()  # the e-mail and the webhook go out on a worker

        # Ada got the e-mail with the link to the exact version, and the webhook fired.
        approved = [m for m in mail.outbox if m.to == ["ada@example.com"] and "approved" in
                    m.subject.lower()]  # fmt: skip
        assert approved, [m.subject for m in mail.outbox]
        assert f"/plans/{plan_id}/versions/2/" in approved[-1].body
        [hook] = Webhook.objects.all()
        posted = [r for r in receiver.received if r.headers["x-forge-event"] == "version_approved"]
        assert len(posted) == 1, receiver.received
        verify(hook.secret, posted[0].body, posted[0].headers)  # Standard Webhooks
        body = json.loads(posted[0].body)
        assert body["kind"] == "version_approved" and body["url"].endswith(
            f"/plans/{plan_id}/versions/2/"
        )
        people.logout(page)
        people.login(page, ada)
        page.goto("/inbox/")
        expect(page.locator(".inbox-item.unread", has_text="was approved by ben")).to_have_count(1)
        shoot(page, "7-author-inbox-approved")
