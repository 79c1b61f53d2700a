"""Held gateway calls where people look (issue 29, item 5, in part): the review queue
shows each held call (server, tool, annotations, arguments, who asked and since when)
with approve and reject, to approvers other than the caller, and counts it among what
waits for them."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.models import HeldCall
from reviews.queue import waiting_count

from .mcp_helpers import conversation
from .mcp_servers import deploy_ledger

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def ledger(settings, tmp_path):
    settings.FORGE_GATEWAY_HOLD_SECONDS = 0
    yield from deploy_ledger(settings, tmp_path)


@pytest.fixture
def agent(make_user: Any) -> Any:
    return make_user("agent", "operator", "approver")


def held_write(token: str) -> HeldCall:
    async def talk(client: Any) -> Any:
        return await client.call_tool("ledger.record_entry", {"key": "deposit", "amount": 300})

    conversation(token, talk, path="/mcp/gateway")
    return HeldCall.objects.get()


def test_an_approver_sees_the_held_call_with_what_it_would_do_and_its_decision_form(
    ledger, agent, approver, client, token_for
):
    held = held_write(token_for(agent))
    client.force_login(approver)

    page = client.get("/review/")

    assert page.status_code == 200
    html = page.content.decode()
    assert f'id="call-{held.pk}"' in html
    assert "<code>ledger.record_entry</code> · write · asked by agent" in html
    assert "<code>destructiveHint=False</code>" in html
    assert "&quot;amount&quot;: 300" in html
    assert f'data-endpoint="gateway/calls/{held.pk}"' in html
    assert waiting_count(approver) == 1


def test_the_caller_is_never_offered_its_own_call(ledger, agent, client, token_for):
    held = held_write(token_for(agent))
    client.force_login(agent)

    page = client.get("/review/")

    assert f'id="call-{held.pk}"' not in page.content.decode()
    assert "No agent call waits for you." in page.content.decode()
    assert waiting_count(agent) == 0


def test_a_decided_call_leaves_the_queue(ledger, agent, approver, api_client, client, token_for):
    held = held_write(token_for(agent))
    api_client(approver).post(
        f"/api/v1/gateway/calls/{held.pk}/reject",
        {"comment": "no"},
        content_type="application/json",
    )
    client.force_login(approver)

    assert f'id="call-{held.pk}"' not in client.get("/review/").content.decode()
    assert waiting_count(approver) == 0
