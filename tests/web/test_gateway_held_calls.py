"""Unbound calls through the gateway (SPEC section 11), with the MCP SDK's own client as
the agent and the tests' ledger server upstream, started as a process: a read passes at
once, audited; a write is held (approval_pending with the held call's id); the agent's
own user cannot approve it; another person approves it and it runs exactly once, while
the agent waits or on its next call; every repeat replays the stored answer; a rejected
call says so with the comment; held, approved, forwarded and answered are separate audit
events."""

from __future__ import annotations

import time
from typing import Any

import anyio
import pytest
from django.db import connections
from django.utils import timezone

from audit.models import AuditEvent
from gateway import calls
from gateway.models import HeldCall

from .mcp_helpers import answer, conversation
from .mcp_servers import deploy_ledger

pytestmark = pytest.mark.django_db(transaction=True)

GATEWAY = "/mcp/gateway"
WRITE = ("ledger.record_entry", {"key": "deposit", "amount": 300})


@pytest.fixture
def ledger(settings, tmp_path):
    settings.FORGE_GATEWAY_HOLD_SECONDS = 0  # answer approval_pending at once, unless a test waits
    yield from deploy_ledger(settings, tmp_path)


@pytest.fixture
def agent(make_user: Any) -> Any:
    """The agent's user may start runs and, elsewhere, approve steps: never its own."""
    return make_user("agent", "operator", "approver")


def call(token: str, tool: str, arguments: dict[str, Any]) -> Any:
    async def talk(client: Any) -> Any:
        return await client.call_tool(tool, arguments)

    return conversation(token, talk, path=GATEWAY)


def decide(client: Any, held_id: int, verdict: str, comment: str = "") -> Any:
    return client.post(
        f"/api/v1/gateway/calls/{held_id}/{verdict}",
        {"comment": comment},
        content_type="application/json",
    )


def gateway_actions() -> list[tuple[str, str]]:
    return list(
        AuditEvent.objects.filter(action__startswith="gateway.")
        .order_by("seq")
        .values_list("action", "actor")
    )


def test_a_read_passes_at_once_and_is_audited(ledger, agent, token_for):
    result = call(token_for(agent), "ledger.list_entries", {})

    assert not result.is_error, result.content
    assert result.structured_content == {"entries": {"rent": 900, "fees": 40}}
    assert ledger.calls() == [{"tool": "list_entries", "args": {}}]
    assert not HeldCall.objects.exists()
    assert gateway_actions() == [
        ("gateway.call_forwarded", "agent"),
        ("gateway.call_answered", "agent"),
    ]


def test_a_write_is_held_the_agent_cannot_approve_it_another_person_does_and_it_runs_once(
    ledger, agent, approver, api_client, token_for
):
    token = token_for(agent)

    pending = call(token, *WRITE)

    held = HeldCall.objects.get()
    assert error_of(pending) == {
        "status": 409,
        "code": "approval_pending",
        "detail": f"held call {held.pk} (ledger.record_entry, write) waits for a person's approval",
        "held_call": held.pk,
    }
    assert ledger.calls() == []
    assert (held.status, held.server, held.arguments) == (
        "held",
        "ledger",
        {"key": "deposit", "amount": 300},
    )
    assert held.annotations == {
        "destructiveHint": False,
        "idempotentHint": True,
        "openWorldHint": False,
    }

    # The same call again attaches to the same held call
    again = call(token, *WRITE)
    assert error_of(again)["held_call"] == held.pk
    assert HeldCall.objects.count() == 1

    own = decide(api_client(agent), held.pk, "approve", "fine by me")
    assert (own.status_code, own.json()["code"]) == (403, "self_approval")
    assert HeldCall.objects.get().status == "held"

    listed = api_client(approver).get("/api/v1/gateway/calls?status=held")
    assert listed.status_code == 200
    [card] = listed.json()["items"]
    assert (card["id"], card["tool"], card["asked_by"], card["side_effect"]) == (
        held.pk,
        "ledger.record_entry",
        "agent",
        "write",
    )
    assert card["rules"][0]["required"] == 1

    approved = decide(api_client(approver), held.pk, "approve", "the deposit is expected")
    assert approved.status_code == 200, approved.json()
    assert (approved.json()["status"], approved.json()["decided_by"]) == ("approved", "approver")
    assert ledger.calls() == []  # approved, not yet forwarded: the agent's call takes it

    ran = call(token, *WRITE)
    replayed = call(token, *WRITE)

    assert not ran.is_error, ran.content
    assert ran.structured_content == {"recorded": "deposit"}
    assert replayed.structured_content == {"recorded": "deposit"}
    assert ledger.calls() == [{"tool": "record_entry", "args": {"key": "deposit", "amount": 300}}]
    assert ledger.entries() == {"rent": 900, "fees": 40, "deposit": 300}
    assert HeldCall.objects.get().status == "answered"
    assert gateway_actions() == [
        ("gateway.call_held", "agent"),
        ("gateway.call_approved", "approver"),
        ("gateway.call_forwarded", "agent"),
        ("gateway.call_answered", "agent"),
    ]


def test_a_call_approved_while_the_agent_waits_is_answered_in_the_same_call(
    ledger, agent, approver, api_client, token_for, settings
):
    settings.FORGE_GATEWAY_HOLD_SECONDS = 40
    reviewer = api_client(approver)

    def approve_when_held() -> int:
        # Well inside the hold: a loaded machine once took over 10 s to hold the call.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            held = HeldCall.objects.filter(status="held").first()
            if held is not None:
                return decide(reviewer, held.pk, "approve").status_code
            time.sleep(0.05)
        return 0

    async def talk(client: Any) -> tuple[Any, list[int]]:
        statuses: list[int] = []

        async def approve_soon() -> None:
            statuses.append(await anyio.to_thread.run_sync(approve_when_held))

        async with anyio.create_task_group() as group:
            group.start_soon(approve_soon)
            result = await client.call_tool(*WRITE)
        return result, statuses

    result, statuses = conversation(token_for(agent), talk, path=GATEWAY)

    assert statuses == [200]
    assert not result.is_error, result.content
    assert result.structured_content == {"recorded": "deposit"}
    assert [c["tool"] for c in ledger.calls()] == ["record_entry"]


def test_a_rejected_call_says_so_with_the_comment_and_never_runs(
    ledger, agent, approver, api_client, token_for
):
    token = token_for(agent)
    call(token, "ledger.delete_entry", {"key": "rent"})
    held = HeldCall.objects.get()

    rejected = decide(api_client(approver), held.pk, "reject", "rent stays on the books")
    answered = call(token, "ledger.delete_entry", {"key": "rent"})

    assert rejected.status_code == 200
    assert error_of(answered) == {
        "status": 409,
        "code": "rejected",
        "detail": f"held call {held.pk} was rejected by approver: rent stays on the books",
        "held_call": held.pk,
    }
    assert ledger.calls() == []
    assert ledger.entries() == {"rent": 900, "fees": 40}
    assert ("gateway.call_rejected", "approver") in gateway_actions()


def test_a_tool_the_gateway_does_not_offer_is_refused(ledger, agent, token_for):
    result = call(token_for(agent), "echo", {"hello": 1})

    assert error_of(result)["code"] == "unknown_tool"
    assert not HeldCall.objects.exists()
    assert gateway_actions() == [("gateway.call_refused", "agent")]


def test_arguments_outside_the_tools_schema_are_refused_in_the_error_shape(
    ledger, agent, token_for
):
    result = call(token_for(agent), "ledger.record_entry", {"key": "deposit", "amount": "lots"})

    assert error_of(result)["code"] == "invalid_args"
    assert not HeldCall.objects.exists()
    assert ledger.calls() == []


def error_of(result: Any) -> dict[str, Any]:
    assert result.is_error, result.content
    return answer(result)["error"]


TWO_FOR_LEDGER_WRITES = (
    "schema: forge.rules/v1\n"
    "rules:\n"
    "  - id: ledger-writes\n"
    "    description: Money records change\n"
    "    when: {server: [ledger]}\n"
    "    require: {approvals: 2}\n"
)


def test_a_rule_asking_two_people_keeps_the_call_held_until_the_second_approves(
    ledger, agent, approver, make_user, api_client, token_for, approval_rules
):
    approval_rules(TWO_FOR_LEDGER_WRITES)
    second = make_user("bea", "approver")
    token = token_for(agent)
    call(token, *WRITE)
    held = HeldCall.objects.get()

    first = decide(api_client(approver), held.pk, "approve")
    twice = decide(api_client(approver), held.pk, "approve")
    still = call(token, *WRITE)

    assert first.status_code == 200
    assert first.json()["status"] == "held"
    assert first.json()["approvals"] == [{"name": "approver", "teams": []}]
    assert [rule["id"] for rule in first.json()["rules"]] == ["ledger-writes"]
    assert (twice.status_code, twice.json()["code"]) == (409, "already_approved")
    assert error_of(still)["code"] == "approval_pending"
    assert ledger.calls() == []

    done = decide(api_client(second), held.pk, "approve")
    ran = call(token, *WRITE)

    assert (done.status_code, done.json()["status"]) == (200, "approved")
    assert ran.structured_content == {"recorded": "deposit"}
    assert [c["tool"] for c in ledger.calls()] == ["record_entry"]


def test_a_held_call_past_its_time_expires_and_a_new_call_asks_again(
    ledger, agent, approver, api_client, token_for
):
    token = token_for(agent)
    call(token, *WRITE)
    first = HeldCall.objects.get()
    HeldCall.objects.filter(pk=first.pk).update(expires_at=timezone.now())

    expired = call(token, *WRITE)
    late = decide(api_client(approver), first.pk, "approve")
    again = call(token, *WRITE)

    assert error_of(expired) == {
        "status": 409,
        "code": "expired",
        "detail": f"held call {first.pk} expired without a decision; call again to ask again",
        "held_call": first.pk,
    }
    assert (late.status_code, late.json()["code"]) == (409, "call_decided")
    second = HeldCall.objects.exclude(pk=first.pk).get()
    assert error_of(again)["held_call"] == second.pk
    assert HeldCall.objects.get(pk=first.pk).status == "expired"
    assert ledger.calls() == []
    assert ("gateway.call_expired", "agent") in gateway_actions()


def test_the_agent_is_told_of_its_wait_by_progress_notifications(
    ledger, agent, token_for, settings
):
    settings.FORGE_GATEWAY_HOLD_SECONDS = 1
    told: list[tuple[float, float | None, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        told.append((done, total, message))

    async def talk(client: Any) -> Any:
        return await client.call_tool(*WRITE, progress_callback=progress)

    result = conversation(token_for(agent), talk, path=GATEWAY)

    held = HeldCall.objects.get()
    assert error_of(result)["code"] == "approval_pending"
    assert told, "no progress was reported while the call was held"
    assert {message for _, _, message in told} == {f"held call {held.pk} waits for a person"}
    assert all(total == 1.0 for _, total, _ in told)


def test_a_held_calls_wait_keeps_no_database_connection(
    ledger, agent, token_for, settings, monkeypatch
):
    """The wait may last FORGE_GATEWAY_HOLD_SECONDS (a minute by default): a pooled
    connection kept by each waiting agent would starve the site's other requests."""
    settings.FORGE_GATEWAY_HOLD_SECONDS = 1
    open_at_each_read: list[bool] = []  # the request's connection, as each status read begins
    status = calls.call_status

    def spied(user: Any, call_id: int) -> str:
        open_at_each_read.append(connections["default"].connection is not None)
        return status(user, call_id)

    monkeypatch.setattr(calls, "call_status", spied)
    result = call(token_for(agent), *WRITE)

    assert error_of(result)["code"] == "approval_pending"
    assert len(open_at_each_read) >= 2
    assert not any(open_at_each_read)
