"""The OpenAI Agents SDK as the agent (issue 29: docs/agents.md's snippet, run): an
``Agent`` whose MCP server is the gateway (``MCPServerStreamableHttp`` with the agent's
bearer token), its model an OpenAI-compatible endpoint (the tests' fake, which refuses a
function name outside OpenAI's pattern as OpenAI does), the tests' ledger upstream as a
process. The model reads the ledger (an unbound read: it passes) and records a deposit
(an unbound write: held, and the model is told approval_pending with the held call's id).
With the SDK's ``tool_meta_resolver`` naming run and step in each call's ``_meta``, the
same agent executes a run started with executor "agent": bound calls, checked against
the approved arguments, and the run succeeds.

The gateway names tools as the catalogue does (``ledger.list_entries``), which OpenAI
refuses as a function name: the snippet sets the SDK's ``include_server_in_tool_names``,
and the last test shows the request OpenAI refuses without it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anyio
import httpx2
import openai
import pytest
from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner
from agents.mcp import MCPServerStreamableHttp
from django.core.asgi import get_asgi_application

from forge_web.mcp import McpEndpoint
from gateway.models import HeldCall
from tests.unit.models.openai_fake import FakeOpenAI, completion, running

from .mcp_helpers import CLIENT
from .mcp_servers import COPY, LOOK, approved, deploy_ledger

pytestmark = pytest.mark.django_db(transaction=True)

READ = "mcp_forge__ledger_list_entries"
WRITE = "mcp_forge__ledger_record_entry"


@pytest.fixture
def ledger(settings, tmp_path):
    settings.FORGE_GATEWAY_HOLD_SECONDS = 0  # approval_pending at once
    yield from deploy_ledger(settings, tmp_path)


@pytest.fixture
def model_endpoint() -> Iterator[FakeOpenAI]:
    with running() as server:
        yield server


def bookkeeper(token: str, endpoint: FakeOpenAI, meta: Any = None, **mcp_config: Any) -> Any:
    """docs/agents.md's snippet, with the gateway reached in this process (its URL's
    requests go into a fresh ``McpEndpoint``: the test's database is visible) and the
    model at the fake endpoint; what ``Runner.run`` answers, or the error it raised."""
    gateway_endpoint = McpEndpoint(get_asgi_application())

    def http_client(**options: Any) -> httpx2.AsyncClient:
        transport = httpx2.ASGITransport(app=gateway_endpoint, client=CLIENT)
        return httpx2.AsyncClient(transport=transport, **options)

    async def main() -> Any:
        model = OpenAIChatCompletionsModel(
            model="fake-model",
            openai_client=openai.AsyncOpenAI(base_url=endpoint.base_url, api_key="sk-test"),
        )
        async with (
            gateway_endpoint.lifespan(),
            MCPServerStreamableHttp(
                name="forge",
                params={
                    "url": "http://testserver/mcp/gateway",
                    "headers": {"Authorization": f"Bearer {token}"},
                    "httpx_client_factory": http_client,
                },
                client_session_timeout_seconds=90,
                tool_meta_resolver=meta,
            ) as gateway,
        ):
            agent = Agent(
                name="Bookkeeper",
                instructions="Keep the ledger.",
                model=model,
                mcp_servers=[gateway],
                mcp_config=mcp_config,
            )
            try:
                return await Runner.run(
                    agent, "Record the deposit of 300", run_config=RunConfig(tracing_disabled=True)
                )
            except openai.APIStatusError as error:
                return error

    return anyio.run(main)


def calls(endpoint: FakeOpenAI, turn: int, name: str, arguments: dict[str, Any]) -> None:
    """Queue a reply that calls one tool, with a call id of its own (the SDK refuses a
    reused one)."""
    body = completion(None, [(name, arguments)])
    body["choices"][0]["message"]["tool_calls"][0]["id"] = f"call_{turn}"
    endpoint.respond(200, body)


def tool_answers(endpoint: FakeOpenAI, request: int) -> list[Any]:
    """What the model was told its tool calls answered, in the request's order."""
    answers = []
    for message in endpoint.messages(request):
        if message["role"] == "tool":
            content = message["content"]  # text, or the SDK's list of text parts
            text = content if isinstance(content, str) else "".join(p["text"] for p in content)
            answers.append(json.loads(text))
    return answers


def test_an_agents_sdk_agent_reads_through_the_gateway_and_its_write_is_held(
    ledger, make_user, token_for, model_endpoint
):
    agent_user = make_user("agent", "operator")
    calls(model_endpoint, 1, READ, {})
    calls(model_endpoint, 2, WRITE, {"key": "deposit", "amount": 300})
    model_endpoint.reply("The deposit waits for a person's approval.")

    result = bookkeeper(token_for(agent_user), model_endpoint, include_server_in_tool_names=True)

    assert not isinstance(result, Exception), result
    assert result.final_output == "The deposit waits for a person's approval."
    offered = {tool["function"]["name"] for tool in model_endpoint.requests[0]["tools"]}
    assert {READ, WRITE} <= offered
    assert tool_answers(model_endpoint, 1) == [{"entries": {"rent": 900, "fees": 40}}]
    held = HeldCall.objects.get()
    assert (held.status, held.tool, held.arguments, held.user.username) == (
        "held",
        "ledger.record_entry",
        {"key": "deposit", "amount": 300},
        "agent",
    )
    refused = tool_answers(model_endpoint, 2)[-1]
    assert refused["error"]["code"] == "approval_pending"
    assert refused["error"]["held_call"] == held.pk
    assert ledger.calls() == [{"tool": "list_entries", "args": {}}]  # the write never went


def test_without_server_prefixed_names_openai_refuses_the_catalogues_tool_names(
    ledger, make_user, token_for, model_endpoint
):
    model_endpoint.reply("never sent")

    result = bookkeeper(token_for(make_user("agent", "operator")), model_endpoint)

    assert isinstance(result, openai.BadRequestError)
    assert "function.name" in str(result)
    assert ledger.calls() == []


def test_an_agents_sdk_agent_executes_a_bound_run_naming_run_and_step_in_meta(
    ledger, author, approver, make_user, api_client, token_for, model_endpoint
):
    """docs/agents.md: the SDK's ``tool_meta_resolver`` names the run and the step, so a
    model's calls are bound calls; a call with other arguments than approved is refused
    to the model, the approved ones run once each and the run succeeds."""
    agent_user = make_user("agent", "operator")
    version = approved(author, approver, [LOOK, COPY])
    started = api_client(agent_user).post(
        "/api/v1/runs",
        {"plan_id": version.plan_id, "version": version.number, "executor": "agent"},
        content_type="application/json",
    )
    assert started.status_code == 201, started.json()
    run_id = started.json()["id"]
    step_of = {"ledger.list_entries": "look", "ledger.record_entry": "copy"}

    def bind(context: Any) -> dict[str, Any]:
        return {"forge/run": run_id, "forge/step": step_of[context.tool_name]}

    calls(model_endpoint, 1, READ, {})
    calls(model_endpoint, 2, WRITE, {"key": "rent_checked", "amount": 1})
    calls(model_endpoint, 3, WRITE, {"key": "rent_checked", "amount": 900})
    model_endpoint.reply("Recorded the checked rent.")

    result = bookkeeper(
        token_for(agent_user), model_endpoint, meta=bind, include_server_in_tool_names=True
    )

    assert not isinstance(result, Exception), result
    assert result.final_output == "Recorded the checked rent."
    assert tool_answers(model_endpoint, 1) == [{"entries": {"rent": 900, "fees": 40}}]
    assert tool_answers(model_endpoint, 2)[-1]["error"]["code"] == "args_mismatch"
    assert tool_answers(model_endpoint, 3)[-1] == {"recorded": "rent_checked"}
    assert [c["tool"] for c in ledger.calls()] == ["list_entries", "record_entry"]
    run = api_client(agent_user).get(f"/api/v1/runs/{run_id}").json()
    assert run["status"] == "succeeded", run
