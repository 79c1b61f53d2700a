"""``/mcp/gateway`` in the web process calls the gateway's functions directly (issue 29,
"Measured"): it sends no request back into Django (each HTTP request's token is checked
in process: tests/web/test_mcp_admission.py), and what it answers is what ``POST
/api/v1/gateway/calls`` answers, refusals included, so that ``forge gateway --url``
(which goes over REST) and ``/mcp/gateway`` cannot drift apart. The agent is the MCP
SDK's client session against a real ledger server."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from asgiref.sync import ThreadSensitiveContext
from django.core.asgi import get_asgi_application
from django.db import OperationalError

from accounts.outages import DATABASE
from audit.models import AuditEvent
from forge.client import ForgeApiError
from forge_web.mcp_gateway import InProcessGateway
from gateway import calls

from .mcp_helpers import answer, session
from .mcp_servers import deploy_ledger

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def ledger(settings, tmp_path):
    yield from deploy_ledger(settings, tmp_path)


@pytest.fixture
def agent(make_user: Any) -> Any:
    return make_user("agent", "operator")


def gateway_calls(token: str, *made: tuple[str, dict[str, Any]]) -> tuple[list[Any], list[str]]:
    """Each ``(tool, arguments)`` called in one gateway session; with the paths of the
    requests the endpoint sent into Django meanwhile."""
    django = get_asgi_application()
    seen: list[str] = []

    async def inner(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            seen.append(scope["path"])
        await django(scope, receive, send)

    async def main() -> list[Any]:
        async with session(token, path="/mcp/gateway", django=inner) as client:
            return [await client.call_tool(tool, arguments) for tool, arguments in made]

    return anyio.run(main), seen


def test_a_call_sends_nothing_into_django(ledger, agent, token_for):
    [listed], paths = gateway_calls(token_for(agent), ("ledger.list_entries", {}))

    assert not listed.is_error, listed.content
    assert answer(listed) == {"entries": {"rent": 900, "fees": 40}}
    assert ledger.calls() == [{"tool": "list_entries", "args": {}}]
    assert paths == []  # no token check through Django, no inner call
    actions = list(
        AuditEvent.objects.filter(action__startswith="gateway.").values_list("action", flat=True)
    )
    assert actions == ["gateway.call_forwarded", "gateway.call_answered"]


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("ledger.no_such_tool", {}),  # unknown_tool
        ("ledger.delete_entry", {}),  # invalid_args: its key is required
        ("x" * 201, {}),  # the REST body's schema: validation_error
        ("ledger.delete_entry", {"key": "rent"}),  # held: approval_pending, with its id
    ],
)
def test_a_refusal_is_the_one_the_rest_api_answers(
    ledger, agent, token_for, api_client, settings, tool, arguments
):
    settings.FORGE_GATEWAY_HOLD_SECONDS = 0  # answer a held call at once
    [refused], _ = gateway_calls(token_for(agent), (tool, arguments))
    rest = api_client(agent).post(
        "/api/v1/gateway/calls", {"tool": tool, "arguments": arguments}, "application/json"
    )

    assert refused.is_error
    error = answer(refused)["error"]
    body = rest.json()
    assert (error["status"], error["code"], error["detail"]) == (
        rest.status_code,
        body["code"],
        body["detail"],
    )
    if "held_call" in body:  # the repeat over REST attached to the same held call
        assert error["held_call"] == body["held_call"]
    assert ledger.calls() == []


def test_a_database_away_is_the_apis_503_not_a_crash(ledger, agent, monkeypatch):
    def away(*args: Any, **kwargs: Any) -> Any:
        raise OperationalError("connection refused")  # Django's own: its pool gave up

    monkeypatch.setattr(calls, "call", away)

    async def call() -> Any:
        async with ThreadSensitiveContext():  # as forge_web.mcp enters one per request
            return await InProcessGateway(agent).gateway_call("ledger.list_entries", {})

    try:
        with pytest.raises(ForgeApiError) as refused:
            anyio.run(call)
    finally:
        DATABASE.recovered()

    assert (refused.value.status, refused.value.code) == (503, "database_unavailable")
    assert refused.value.body["detail"].startswith("The database is unavailable")
    assert ledger.calls() == []


def test_a_call_outside_a_requests_thread_context_is_refused_loudly(ledger, agent):
    """Outside the context ``forge_web.mcp`` enters for each request, the call would run on
    the one thread the whole process shares: refused, and nothing forwarded."""

    async def call() -> Any:
        return await InProcessGateway(agent).gateway_call("ledger.list_entries", {})

    with pytest.raises(RuntimeError, match="thread context"):
        anyio.run(call)

    assert ledger.calls() == []
