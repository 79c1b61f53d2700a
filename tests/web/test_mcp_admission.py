"""Each HTTP request to ``/mcp`` and ``/mcp/gateway`` is checked as the API checks a
request with a bearer token (``forge_web.mcp_admission``), in process, with the API's own
parts: the same rates and counts, the same HTTPS redirect, the same answers. Refusals of
unknown, revoked and inactive users' tokens and of other hosts: tests/web/test_mcp_endpoint.py.
"""

from __future__ import annotations

from typing import Any

import anyio
import httpx2
import pytest
from django.core.asgi import get_asgi_application
from django.db import OperationalError, connections

from accounts.outages import DATABASE
from forge_web import mcp, mcp_admission
from forge_web.mcp import McpEndpoint

from .mcp_helpers import CLIENT, session

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("own_cache")]

THROTTLED = {"detail": "Too many requests.", "code": "throttled"}
PLAN = {"goal": "Say hi", "steps": [{"id": "hi", "description": "Say hi", "tool": "echo"}]}
LIST_TOOLS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


def posts(
    *tokens: str, path: str = "/mcp", headers: dict[str, str] | None = None
) -> list[httpx2.Response]:
    """A ``tools/list`` POST to ``path`` with each token in turn (and ``headers``), from
    one address, to one endpoint whose session manager runs."""
    endpoint = McpEndpoint(get_asgi_application())
    accept = "application/json, text/event-stream"

    async def main() -> list[httpx2.Response]:
        transport = httpx2.ASGITransport(app=endpoint, client=CLIENT)
        async with (
            endpoint.lifespan(),
            httpx2.AsyncClient(transport=transport, base_url="http://testserver") as http,
        ):
            return [
                await http.post(
                    path,
                    json=LIST_TOOLS,
                    headers={
                        "Authorization": f"Bearer {token}",
                        "Accept": accept,
                        **(headers or {}),
                    },
                )
                for token in tokens
            ]

    return anyio.run(main)


def assert_throttled(response: httpx2.Response) -> None:
    assert response.status_code == 429
    assert response.json() == THROTTLED
    assert 1 <= int(response.headers["Retry-After"]) <= 60


@pytest.mark.parametrize("path", ["/mcp", "/mcp/gateway"])
def test_a_person_past_the_api_rate_is_429_and_mcp_and_api_share_one_allowance(
    settings, viewer, token_for, api_client, path
):
    settings.FORGE_API_RATE = "3/min"
    token = token_for(viewer)

    passed = posts(token, token, path=path)
    api = api_client(viewer).get("/api/v1/me")  # the third request of the minute
    [refused] = posts(token, path=path)

    assert [answer.status_code for answer in passed] == [200, 200]
    assert api.status_code == 200
    assert_throttled(refused)
    assert api_client(viewer).get("/api/v1/me").status_code == 429


def test_an_address_refused_too_often_is_429_before_its_token_is_read(settings, viewer, token_for):
    settings.FORGE_API_ANON_RATE = "2/min"
    bad = "forge_000000000000_" + "x" * 43

    answers = posts(bad, bad, token_for(viewer))

    assert [answer.status_code for answer in answers[:2]] == [401, 401]
    assert_throttled(answers[2])  # even a good token, from this address, for a while


def test_with_ssl_redirect_on_a_plain_http_request_is_redirected_as_the_api_is(
    settings, viewer, token_for, api_client
):
    settings.SECURE_SSL_REDIRECT = True
    token = token_for(viewer)

    [answer] = posts(token)
    api = api_client(viewer).get("/api/v1/me")

    assert (answer.status_code, api.status_code) == (301, 301)
    assert answer.headers["Location"] == "https://testserver/mcp"
    assert api["Location"] == "https://testserver/api/v1/me"


def test_behind_a_proxy_that_says_https_the_request_goes_on(settings, viewer, token_for):
    settings.SECURE_SSL_REDIRECT = True
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

    [answer] = posts(token_for(viewer), headers={"X-Forwarded-Proto": "https"})

    assert answer.status_code == 200


def test_a_database_away_at_the_check_is_503_with_retry_after(viewer, token_for, monkeypatch):
    token = token_for(viewer)

    def away(token: str) -> Any:
        raise OperationalError("connection refused")  # Django's own: its pool gave up

    monkeypatch.setattr(mcp_admission, "bearer_user", away)
    try:
        [answer] = posts(token, path="/mcp/gateway")
    finally:
        DATABASE.recovered()

    assert answer.status_code == 503
    assert answer.json()["code"] == "database_unavailable"
    assert int(answer.headers["Retry-After"]) >= 1


def test_mcp_keeps_no_connection_while_its_tools_call_the_api(author, token_for, monkeypatch):
    """``/mcp``'s tools make REST requests of their own and may wait on them (an approval,
    up to 600 s): the request's own connection, the admission's, is closed by then. (The
    gateway's keeps it: its call reuses it.)"""
    admitted_on: list[Any] = []  # each request's thread's connection, as admitted

    def admit(scope: Any, token: str) -> Any:
        answer = mcp_admission.admit(scope, token)
        admitted_on.append(connections["default"])
        return answer

    monkeypatch.setattr(mcp, "admit", admit)
    django = get_asgi_application()
    open_meanwhile: list[bool] = []
    token = token_for(author)

    async def inner(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":  # a tool's REST request
            open_meanwhile.append(admitted_on[-1].connection is not None)
        await django(scope, receive, send)

    async def main() -> Any:
        async with session(token, django=inner) as client:
            return await client.call_tool("compile_plan", {"document": PLAN})

    result = anyio.run(main)

    assert not result.is_error, result.content
    assert open_meanwhile == [False]
