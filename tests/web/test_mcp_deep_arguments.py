"""``/mcp`` reads its messages as the API reads bodies (``forge_web.strict_json``): a plan
document nested past the depth limit in a tool's arguments is refused with the API's own
``document_too_deep`` however deep it is (a little too deep: by the API the tool calls,
as a tool error; absurdly deep: before the MCP SDK reads the message, as a JSON-RPC parse
error carrying the code), and a repeated key is ``duplicate_key``, never "the last one
wins"."""

from __future__ import annotations

import json

import anyio
import httpx2
import pytest
from django.core.asgi import get_asgi_application

from forge_web.mcp import McpEndpoint
from plans.models import Plan

from .mcp_helpers import CLIENT, answer, call

pytestmark = pytest.mark.django_db(transaction=True)


def _document(args_text: str) -> str:
    return (
        '{"goal": "g", "steps": [{"id": "a", "description": "Echo it", "tool": "echo", '
        f'"args": {args_text}}}]}}'
    )


def test_a_document_a_little_too_deep_is_refused_by_the_api_the_tool_calls(author, token_for):
    document = json.loads(_document('{"a":' * 40 + "1" + "}" * 40))

    result = call(token_for(author), "compile_plan", {"document": document})

    assert result.is_error
    assert answer(result)["error"]["code"] == "document_too_deep"


def _post(token: str, body: str) -> httpx2.Response:
    endpoint = McpEndpoint(get_asgi_application())

    async def post() -> httpx2.Response:
        transport = httpx2.ASGITransport(app=endpoint, client=CLIENT)
        async with (
            endpoint.lifespan(),
            httpx2.AsyncClient(transport=transport, base_url="http://testserver") as http,
        ):
            return await http.post("/mcp", content=body, headers={
                "Authorization": f"Bearer {token}",
                "Accept": "application/json, text/event-stream",
                "Content-Type": "application/json",
            })  # fmt: skip

    return anyio.run(post)


def _tool_call(arguments: str) -> str:
    return (
        '{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "submit_plan", '
        f'"arguments": {arguments}}}}}'
    )


def test_a_document_absurdly_deep_is_refused_with_the_same_code(author, token_for):
    levels = 100_000
    deep = _document('{"a":' * levels + "1" + "}" * levels)

    response = _post(token_for(author), _tool_call('{"name": "Deep", "document": ' + deep + "}"))

    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == -32700
    assert error["data"]["code"] == "document_too_deep"
    assert "max_depth" in error["data"]["detail"]
    assert Plan.objects.count() == 0


def test_a_repeated_key_in_a_tool_call_is_refused(author, token_for):
    arguments = '{"name": "Twice", "name": "Again", "document": ' + _document("{}") + "}"

    response = _post(token_for(author), _tool_call(arguments))

    assert response.status_code == 400
    assert response.json()["error"]["data"]["code"] == "duplicate_key"
    assert Plan.objects.count() == 0


def test_a_well_formed_tool_call_still_reaches_the_tool(author, token_for):
    arguments = '{"name": "Fine", "document": ' + _document("{}") + "}"

    response = _post(token_for(author), _tool_call(arguments))

    assert response.status_code == 200
    assert Plan.objects.get().name == "Fine"
