"""Held gateway calls where people look (issue 29, item 5): a held call reaches the inbox
(and e-mail) of the people who can decide it under the approval rules, never its caller;
its card shows server, tool, annotations, arguments, who asked and since when, with
approve and reject; the item resolves itself once the call is decided, expired, or the
person can no longer bring it closer."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.core import mail
from django.utils import timezone

from accounts import teams
from gateway.models import HeldCall
from reviews.models import Notification, Webhook, WebhookDelivery

from .mcp_helpers import conversation
from .mcp_servers import deploy_ledger
from .runs_helpers import drain
from .test_gateway_held_calls import TWO_FOR_LEDGER_WRITES

pytestmark = pytest.mark.django_db(transaction=True)

GATEWAY = "/mcp/gateway"
WRITE = ("ledger.record_entry", {"key": "deposit", "amount": 300})


@pytest.fixture
def ledger(settings, tmp_path):
    settings.FORGE_GATEWAY_HOLD_SECONDS = 0
    settings.FORGE_BASE_URL = "https://forge.example.com"
    yield from deploy_ledger(settings, tmp_path)


@pytest.fixture
def agent(make_user: Any) -> Any:
    return make_user("agent", "operator", "approver", email="agent@example.com")


def call(token: str) -> Any:
    async def talk(client: Any) -> Any:
        return await client.call_tool(*WRITE)

    return conversation(token, talk, path=GATEWAY)


def held_write(token: str) -> HeldCall:
    call(token)
    return HeldCall.objects.get()


def asks(user: Any) -> list[Notification]:
    return list(Notification.objects.filter(recipient=user, kind="call_held"))


def test_a_held_call_reaches_the_approvers_inbox_and_mail_but_never_its_caller(
    ledger, agent, approver, make_user, token_for
):
    approver.email = "approver@example.com"
    approver.save()
    make_user("viewer", "viewer")

    held = held_write(token_for(agent))

    [item] = Notification.objects.filter(kind="call_held")
    assert item.recipient == approver
    assert item.held_call_id == held.pk
    assert item.actor == "agent"
    assert item.title == "Call of ledger.record_entry (write) by agent waits for you"
    assert item.url == f"/review/#call-{held.pk}"
    assert "Server ledger, tool ledger.record_entry" in item.comment
    assert asks(agent) == []
    drain()  # the e-mail is a task for the workers
    [message] = [m for m in mail.outbox if m.to == ["approver@example.com"]]
    assert "ledger.record_entry" in message.subject + message.body


def test_the_card_shows_what_the_call_would_do_and_who_asked(
    ledger, agent, approver, client, token_for
):
    held = held_write(token_for(agent))
    client.force_login(approver)

    html = client.get("/inbox/").content.decode()

    assert f'data-call="{held.pk}"' in html
    assert "<code>ledger.record_entry</code> on server <code>ledger</code> · write" in html
    assert 'asked by <strong class="call-asked-by">agent</strong> since' in html
    assert "<code>destructiveHint=False</code>" in html
    assert "&quot;amount&quot;: 300" in html
    assert f'action="/inbox/calls/{held.pk}/decide/"' in html


def test_the_api_inbox_carries_the_held_call(ledger, agent, approver, api_client, token_for):
    held = held_write(token_for(agent))

    [item] = api_client(approver).get("/api/v1/me/inbox").json()["items"]

    assert item["kind"] == "call_held"
    assert item["held_call"]["id"] == held.pk
    assert (item["held_call"]["server"], item["held_call"]["tool"]) == (
        "ledger",
        "ledger.record_entry",
    )
    assert item["held_call"]["arguments"] == {"key": "deposit", "amount": 300}
    assert item["held_call"]["asked_by"] == "agent"


def test_approving_from_the_card_approves_the_call_and_resolves_the_item(
    ledger, agent, approver, client, token_for
):
    token = token_for(agent)
    held = held_write(token)
    client.force_login(approver)

    answer = client.post(f"/inbox/calls/{held.pk}/decide/", {"decision": "approve"})
    page = client.get("/inbox/").content.decode()
    ran = call(token)

    assert answer.status_code == 302
    assert HeldCall.objects.get(pk=held.pk).decided_by == approver
    [item] = asks(approver)
    assert item.resolution == "approved by approver"
    assert "Resolved: approved by approver" in page
    assert f'action="/inbox/calls/{held.pk}/decide/"' not in page
    assert ran.structured_content == {"recorded": "deposit"}
    assert [c["tool"] for c in ledger.calls()] == ["record_entry"]


def test_a_rejection_resolves_the_item_with_who_rejected(
    ledger, agent, approver, make_user, api_client, token_for
):
    other = make_user("olga", "approver")
    held = held_write(token_for(agent))

    api_client(other).post(
        f"/api/v1/gateway/calls/{held.pk}/reject",
        {"comment": "no"},
        content_type="application/json",
    )

    [item] = asks(approver)
    assert item.resolution == "rejected by olga"
    assert item.resolved_at is not None


def test_the_caller_cannot_decide_from_the_card(ledger, agent, client, token_for):
    held = held_write(token_for(agent))
    client.force_login(agent)

    answer = client.post(f"/inbox/calls/{held.pk}/decide/", {"decision": "approve"}, follow=True)

    assert "cannot decide on their own held call" in answer.content.decode()
    assert HeldCall.objects.get(pk=held.pk).status == "held"


def test_an_expired_call_resolves_its_item_when_the_inbox_is_read(
    ledger, agent, approver, client, token_for
):
    held = held_write(token_for(agent))
    HeldCall.objects.filter(pk=held.pk).update(expires_at=timezone.now())
    client.force_login(approver)

    client.get("/inbox/")

    [item] = asks(approver)
    assert item.resolution == "expired without a decision"


def test_under_a_team_rule_only_its_members_are_asked(
    ledger, agent, approver, make_user, token_for, approval_rules
):
    approval_rules(
        "schema: forge.rules/v1\n"
        "rules:\n"
        "  - id: ledger-writes\n"
        "    description: Money records change\n"
        "    when: {server: [ledger]}\n"
        "    require: {team: finance}\n"
    )
    carol = make_user("carol", "approver")
    teams.join_teams(carol, ["finance"], actor="test")

    held = held_write(token_for(agent))

    assert asks(approver) == []
    [item] = asks(carol)
    assert item.held_call_id == held.pk
    assert item.title.endswith("waits for you: rule ledger-writes needs 1 of finance")


def test_a_counted_approval_resolves_that_persons_item_while_others_still_wait(
    ledger, agent, approver, make_user, api_client, token_for, approval_rules
):
    approval_rules(TWO_FOR_LEDGER_WRITES)
    second = make_user("bea", "approver")
    held = held_write(token_for(agent))

    api_client(approver).post(
        f"/api/v1/gateway/calls/{held.pk}/approve", {}, content_type="application/json"
    )

    [mine] = asks(approver)
    [theirs] = asks(second)
    assert mine.resolution.startswith("waits for others: ")
    assert theirs.resolved_at is None


def test_a_webhook_that_wants_held_calls_gets_one_delivery_naming_it(
    ledger, agent, approver, token_for
):
    Webhook.objects.create(
        name="chat", url="https://hooks.example.com/forge", secret="whsec_c2VjcmV0",
        kinds=["call_held"], created_by="admin",
    )  # fmt: skip
    Webhook.objects.create(
        name="runs only", url="https://hooks.example.com/runs", secret="whsec_c2VjcmV0",
        kinds=["run_failed"], created_by="admin",
    )  # fmt: skip
    token = token_for(agent)

    held = held_write(token)
    call(token)  # the same call again attaches to the same held call: no second news

    [delivery] = WebhookDelivery.objects.all()
    body = json.loads(delivery.body)
    assert (delivery.webhook.name, delivery.kind) == ("chat", "call_held")
    assert (body["kind"], body["held_call"], body["actor"]) == ("call_held", held.pk, "agent")
    assert body["url"] == f"https://forge.example.com/review/#call-{held.pk}"
    assert len(asks(approver)) == 1
