"""A held gateway call in a person's inbox, in Chromium (issue 29, item 5): an agent's
write through /mcp/gateway is held; an approver finds it from the nav's count, reads on
its card the server, tool, annotations, arguments, who asked and since when, approves it
from the card, and the item resolves itself; the agent's next call runs it, once.
Screenshots go to test-artifacts/e2e/<test>/."""

from __future__ import annotations

import re
import threading
from typing import Any

import pytest
from playwright.sync_api import expect

from gateway.models import HeldCall
from tests.web.mcp_helpers import conversation
from tests.web.mcp_servers import deploy_ledger

from .conftest import shoot

pytestmark = pytest.mark.django_db(transaction=True)

WRITE = ("ledger.record_entry", {"key": "deposit", "amount": 300})


@pytest.fixture
def ledger(settings, tmp_path):
    settings.FORGE_GATEWAY_HOLD_SECONDS = 0  # the agent is told approval_pending at once
    yield from deploy_ledger(settings, tmp_path)


def agent_calls(token: str) -> Any:
    """The agent's call through /mcp/gateway (the MCP SDK's client), on a thread of its
    own: the browser's driver keeps an event loop on this one."""
    answers: list[Any] = []

    async def talk(client: Any) -> Any:
        return await client.call_tool(*WRITE)

    thread = threading.Thread(
        target=lambda: answers.append(conversation(token, talk, "/mcp/gateway"))
    )
    thread.start()
    thread.join(timeout=60)
    assert answers, "the agent's call did not finish"
    return answers[0]


def test_an_approver_approves_a_held_call_from_the_inbox_card(page, people, ledger, token_for):
    agent = people.make("agent", "operator")
    grace = people.make("grace", "approver")
    token = token_for(agent)

    pending = agent_calls(token)
    assert pending.is_error
    held = HeldCall.objects.get()

    people.login(page, grace)
    expect(page.locator("#inbox-count")).to_have_text("1")
    page.click("#inbox-link")
    page.wait_for_url(re.compile(r".*/inbox/$"))
    item = page.locator('.inbox-item[data-kind="call_held"]')
    expect(item).to_have_count(1)
    expect(item.locator(".inbox-title")).to_have_text(
        "Call of ledger.record_entry (write) by agent waits for you"
    )
    card = item.locator(f'.inbox-call[data-call="{held.pk}"]')
    expect(card).to_contain_text("ledger.record_entry on server ledger · write")
    expect(card.locator(".call-asked-by")).to_have_text("agent")
    expect(card).to_contain_text("destructiveHint=False")
    expect(card.locator(".call-arguments")).to_contain_text('"amount": 300')
    expect(card.locator("time").first).to_have_attribute(
        "datetime", re.compile(r"^\d{4}-\d\d-\d\dT")
    )
    shoot(page, "held-call-card")

    card.locator("textarea[name=comment]").fill("The deposit is expected")
    card.get_by_role("button", name="Approve the call").click()
    page.wait_for_url(re.compile(r".*/inbox/$"))

    expect(page.get_by_text(f"Held call {held.pk} (ledger.record_entry) approved")).to_be_visible()
    resolved = page.locator('.inbox-item[data-kind="call_held"][data-resolved]')
    expect(resolved.locator(".inbox-resolution")).to_contain_text("Resolved: approved by grace")
    expect(resolved.get_by_role("button", name="Approve the call")).to_have_count(0)
    expect(page.locator("#inbox-count")).to_be_hidden()
    shoot(page, "held-call-approved")
    held.refresh_from_db()
    assert (held.status, held.decided_by, held.comment) == (
        "approved",
        grace,
        "The deposit is expected",
    )

    ran = agent_calls(token)
    assert ran.structured_content == {"recorded": "deposit"}
    assert [c["tool"] for c in ledger.calls()] == ["record_entry"]
