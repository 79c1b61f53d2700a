"""/mcp takes a live API token and nothing else (no session cookie, no host outside
ALLOWED_HOSTS, no body over the limit), answering refusals in the API's error shape; the
site's ASGI application serves it once the lifespan protocol started its session manager.
"""

from __future__ import annotations

from typing import Any

import anyio
import httpx2
import pytest
from django.core.asgi import get_asgi_application
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from accounts import services as accounts
from accounts.models import ApiToken
from forge.mcp_server import TOOL_NAMES
from forge_web.mcp import McpEndpoint

from .mcp_helpers import CLIENT, raw_post

pytestmark = pytest.mark.django_db(transaction=True)

MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


def endpoint() -> McpEndpoint:
    return McpEndpoint(get_asgi_application())


def test_a_request_without_a_bearer_token_is_401_with_a_challenge():
    status, headers, body = raw_post(endpoint(), MCP_HEADERS)

    assert status == 401
    # Where a host that speaks MCP's authorization flow finds Forge's OAuth server.
    assert headers["www-authenticate"] == (
        'Bearer realm="forge", resource_metadata='
        '"http://testserver/.well-known/oauth-protected-resource/mcp"'
    )
    assert body == {
        "detail": "An API token is required: Authorization: Bearer <token>",
        "code": "not_authenticated",
    }


@pytest.mark.parametrize("path", ["/mcp", "/mcp/gateway"])
def test_an_unknown_revoked_or_inactive_users_token_is_401_as_the_api_says(
    author, make_user, token_for, path
):
    revoked = token_for(author, "old")
    accounts.revoke_token(ApiToken.objects.get(name="old"), actor="admin")
    gone = make_user("gone", "author", is_active=False)
    refused = "forge_0123456789ab_" + "x" * 43

    for token in (refused, revoked, token_for(gone)):
        status, headers, body = raw_post(
            endpoint(), {**MCP_HEADERS, "Authorization": f"Bearer {token}"}, path=path
        )

        assert status == 401
        assert headers["www-authenticate"] == (
            'Bearer realm="forge", error="invalid_token", resource_metadata='
            f'"http://testserver/.well-known/oauth-protected-resource{path}"'
        )
        assert body == {"detail": "Invalid or revoked API token", "code": "not_authenticated"}


def test_a_logged_in_browser_session_is_not_enough(author, session_client):
    browser = session_client(author)
    cookie = f"sessionid={browser.cookies['sessionid'].value}"

    status, _, body = raw_post(endpoint(), {**MCP_HEADERS, "Cookie": cookie})

    assert (status, body["code"]) == (401, "not_authenticated")


def test_a_host_outside_allowed_hosts_is_refused(author, token_for):
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {token_for(author)}"}

    status, _, body = raw_post(endpoint(), headers, host="evil.example")

    assert (status, body) == (400, {"detail": "Bad Request", "code": "bad_request"})


def test_a_body_over_the_limit_is_refused_before_it_is_read(author, token_for, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 512
    headers = {
        **MCP_HEADERS,
        "Authorization": f"Bearer {token_for(author)}",
        "Content-Type": "application/json",
    }

    async def post() -> httpx2.Response:
        transport = httpx2.ASGITransport(app=endpoint(), client=CLIENT)
        async with httpx2.AsyncClient(transport=transport, base_url="http://testserver") as http:
            return await http.post("/mcp", content=b"[" + b" " * 1024 + b"]", headers=headers)

    response = anyio.run(post)

    assert response.status_code == 413
    assert response.json()["code"] == "request_too_large"


def test_the_sites_asgi_application_serves_mcp_between_lifespan_startup_and_shutdown(
    author, token_for
):
    from forge_web.asgi import application

    token = token_for(author)

    async def main() -> tuple[list[str], list[str]]:
        to_app, app_inbox = anyio.create_memory_object_stream[dict[str, Any]](2)
        app_outbox, from_app = anyio.create_memory_object_stream[dict[str, Any]](2)
        said: list[str] = []
        async with anyio.create_task_group() as group:
            group.start_soon(application, {"type": "lifespan"}, app_inbox.receive, app_outbox.send)
            await to_app.send({"type": "lifespan.startup"})
            said.append((await from_app.receive())["type"])
            headers = {"Authorization": f"Bearer {token}"}
            transport = httpx2.ASGITransport(app=application, client=CLIENT)
            async with (
                httpx2.AsyncClient(transport=transport, headers=headers) as http,
                streamable_http_client("http://localhost/mcp", http_client=http) as streams,
                ClientSession(*streams) as client,
            ):
                await client.initialize()
                tools = [tool.name for tool in (await client.list_tools()).tools]
            await to_app.send({"type": "lifespan.shutdown"})
            said.append((await from_app.receive())["type"])
        return said, tools

    said, tools = anyio.run(main)

    assert said == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
    assert tuple(tools) == TOOL_NAMES
