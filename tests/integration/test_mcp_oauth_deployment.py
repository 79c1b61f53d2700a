"""MCP authorization end to end (issue 29 item 6): the official MCP SDK's OAuth client
(``mcp.client.auth.OAuthClientProvider``) connects to a real Forge web process knowing
nothing but the endpoint's URL. It is refused (401 naming the resource metadata),
discovers the protected resource and Forge's authorization server, registers itself,
sends a person to the consent page (driven here by an HTTP client holding that person's
signed-in session), exchanges the code with its PKCE verifier, and then lists and calls
tools over streamable HTTP as that person: what it submits is the person's, who still
cannot approve it; at the gateway (the tests' ledger server upstream) a read passes, a
write is held, the person's own approval through the token is refused, another person
approves, and the write runs once. SQLite only: the processes are what is tested here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from html.parser import HTMLParser
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

from runs.management.commands.forge_demo import DEMO_PASSWORD
from tests.fixtures.ledger import Ledger, mcp_servers_file

from .deployment import Deployment

pytestmark = pytest.mark.slow

REDIRECT_URI = "http://localhost:33418/callback"
DOCUMENT = {
    "goal": "Echo a greeting",
    "steps": [{"id": "hello", "description": "Say hello", "tool": "echo", "args": {"hi": 1}}],
}


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> Ledger:
    return Ledger.at(tmp_path_factory.mktemp("ledger"), rent=900)


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory, ledger: Ledger) -> Iterator[Deployment]:
    root = tmp_path_factory.mktemp("oauth")
    policy = root / "policy.yaml"
    # The default policy's scopes (the demo plans use them) and the ledger server's.
    scopes = ["compute", "file_read", "file_write", "shell", "http", "database_read", "mcp.ledger"]
    policy.write_text("allow: {" + ", ".join(f"{s}: ['*']" for s in scopes) + "}\n")
    servers = mcp_servers_file(root / "mcp.json", ledger=ledger.entry())
    settings = {
        "FORGE_MCP_SERVERS": str(servers),
        "FORGE_POLICY": str(policy),
        "FORGE_GATEWAY_HOLD_SECONDS": "0",
    }
    running = Deployment("sqlite", root / "deployment", extra_env=settings)
    running.root.mkdir()
    try:
        yield running.start(workers=0)
    finally:
        running.stop()
        print(running.logs())


class MemoryStorage(TokenStorage):
    """What a host keeps between runs: its registration and its tokens."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class FormFields(HTMLParser):
    """The named inputs of the consent page's form."""

    def __init__(self) -> None:
        super().__init__()
        self.fields: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = dict(attrs)
        if tag == "input" and named.get("type") == "hidden" and named.get("name"):
            self.fields[str(named["name"])] = named.get("value") or ""


class Person:
    """A person at a browser: signed in to Forge, answering the consent page."""

    def __init__(self, base: str, username: str) -> None:
        self.http = httpx.Client(base_url=base, timeout=30)
        login = self.http.get("/accounts/login/")
        csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login.text)
        assert csrf is not None, login.text
        signed_in = self.http.post(
            "/accounts/login/",
            data={"csrfmiddlewaretoken": csrf[1], "username": username, "password": DEMO_PASSWORD},
        )
        assert signed_in.status_code == 302, signed_in.text
        self.pages: list[str] = []

    def consent(self, authorization_url: str) -> str:
        """Opens the consent page, allows, and returns where Forge sent the browser."""
        page = self.http.get(authorization_url)
        assert page.status_code == 200, page.text
        self.pages.append(page.text)
        form = FormFields()
        form.feed(page.text)
        answer = self.http.post(
            urlsplit(authorization_url).path, data={**form.fields, "allow": "Authorize"}
        )
        assert answer.status_code == 302, answer.text
        return answer.headers["location"]


def connect_as(deployment: Deployment, username: str, path: str, talk: Any) -> tuple[Any, Any]:
    """Runs ``talk(session)`` over an MCP session that the SDK's OAuth client opened with
    ``username``'s consent; (talk's answer, the storage the host kept)."""
    person = Person(deployment.base, username)
    storage = MemoryStorage()
    sent_to: list[str] = []

    async def redirect(url: str) -> None:
        sent_to.append(url)

    async def callback() -> AuthorizationCodeResult:
        back = await anyio.to_thread.run_sync(person.consent, sent_to[-1])
        assert back.startswith(REDIRECT_URI + "?"), back
        query = parse_qs(urlsplit(back).query)
        return AuthorizationCodeResult(code=query["code"][0], state=query["state"][0])

    provider = OAuthClientProvider(
        server_url=deployment.base + path,
        client_metadata=OAuthClientMetadata(
            client_name="An MCP host",
            redirect_uris=[REDIRECT_URI],  # type: ignore[list-item]
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
        ),
        storage=storage,
        redirect_handler=redirect,
        callback_handler=callback,
    )

    async def main() -> Any:
        async with (
            httpx2.AsyncClient(auth=provider, timeout=30) as http,
            streamable_http_client(deployment.base + path, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return await talk(session)

    answer = anyio.run(main)
    assert len(person.pages) == 1 and "An MCP host asks to act as " + username in person.pages[0]
    return answer, storage


def test_an_mcp_host_connects_through_oauth_and_acts_as_the_person_who_consented(deployment):
    async def talk(session: ClientSession) -> Any:
        tools = await session.list_tools()
        submitted = await session.call_tool(
            "submit_plan", {"name": "Greeting", "document": DOCUMENT}
        )
        return [tool.name for tool in tools.tools], submitted.structured_content

    (names, submitted), storage = connect_as(deployment, "ada", "/mcp", talk)

    assert "submit_plan" in names and "start_run" in names
    assert (submitted["author"], submitted["status"]) == ("ada", "awaiting_approval")
    assert storage.client is not None and storage.client.token_endpoint_auth_method == "none"
    assert storage.tokens is not None and storage.tokens.scope == "mcp"
    token = storage.tokens.access_token
    me = httpx.get(
        f"{deployment.base}/api/v1/me", headers={"Authorization": f"Bearer {token}"}
    ).json()
    assert (me["username"], me["auth"]) == ("ada", "oauth")
    # The agent acts as ada, and ada cannot approve what she submitted.
    own = httpx.post(
        f"{deployment.base}/api/v1/plans/{submitted['plan_id']}/versions/"
        f"{submitted['version']}/approve",
        json={"comment": "mine"},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert (own.status_code, own.json()["code"]) == (403, "permission_denied")
    # Revoked at the server, the token is refused at /mcp with the challenge again.
    revoked = httpx.post(
        f"{deployment.base}/oauth/revoke/",
        data={"token": token, "client_id": storage.client.client_id},
    )
    assert revoked.status_code == 200
    refused = httpx.post(
        f"{deployment.base}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={
            "Authorization": f"Bearer {token}",
            "Accept": "application/json, text/event-stream",
        },
    )
    assert refused.status_code == 401
    assert refused.headers["www-authenticate"] == (
        f'Bearer realm="forge", error="invalid_token", resource_metadata='
        f'"{deployment.base}/.well-known/oauth-protected-resource/mcp"'
    )


def test_the_gateway_takes_the_same_flow_and_the_person_still_cannot_approve_their_own_call(
    deployment, ledger
):
    write = ("ledger.record_entry", {"key": "deposit", "amount": 300})

    async def talk(session: ClientSession) -> Any:
        tools = {tool.name for tool in (await session.list_tools()).tools}
        read = await session.call_tool("ledger.list_entries", {})
        held = await session.call_tool(*write)
        return tools, read.structured_content, held

    # Grace approves steps, and her agent acts as her.
    (tools, read, held), storage = connect_as(deployment, "grace", "/mcp/gateway", talk)

    assert {"ledger.list_entries", "ledger.record_entry"} <= tools
    assert read == {"entries": {"rent": 900}}
    assert held.is_error and held.structured_content is not None
    assert held.structured_content["error"]["code"] == "approval_pending"
    call_id = held.structured_content["error"]["held_call"]
    assert storage.tokens is not None
    token = storage.tokens.access_token
    own = httpx.post(
        f"{deployment.base}/api/v1/gateway/calls/{call_id}/approve",
        json={},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert (own.status_code, own.json()["code"]) == (403, "self_approval")
    assert [call for call in ledger.calls() if call["tool"] == "record_entry"] == []

    deployment.tokens["barbara"] = (
        deployment.manage("forge_user", "barbara", "--token").strip().splitlines()[-1]
    )
    approved = deployment.api("barbara", "POST", f"/gateway/calls/{call_id}/approve", {})
    assert (approved["status"], approved["decided_by"]) == ("approved", "barbara")

    async def again() -> tuple[Any, Any]:
        # The token the host keeps works on its own, as any bearer token does.
        headers = {"Authorization": f"Bearer {token}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http,
            streamable_http_client(deployment.base + "/mcp/gateway", http_client=http) as streams,
            ClientSession(*streams) as session,
        ):
            await session.initialize()
            return await session.call_tool(*write), await session.call_tool(*write)

    ran, replayed = anyio.run(again)

    assert ran.structured_content == replayed.structured_content == {"recorded": "deposit"}
    writes = [call for call in ledger.calls() if call["tool"] == "record_entry"]
    assert writes == [{"tool": "record_entry", "args": {"key": "deposit", "amount": 300}}]
