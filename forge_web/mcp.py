"""Forge's MCP tools over streamable HTTP at ``/mcp``, and the gateway (SPEC section 11)
at ``/mcp/gateway``, served by the web process.

The tools are ``forge.mcp_server``'s, the ones ``forge mcp`` serves over stdio. Here each
call goes into this process's own Django application (``httpx.ASGITransport``, no
network) as a REST request carrying the MCP request's bearer token, scheme, host and
client address: the API authenticates it, checks the user's permissions, refuses what the
gate refuses and writes the audit trail, exactly as for any API call, so an agent can do
nothing here that its token's user could not do with curl.

- Authentication: ``Authorization: Bearer <token>`` only, an API token or an access
  token of Forge's OAuth server (MCP authorization: ``accounts.oauth_tokens``). Cookies
  are not accepted, so a page in a browser can never drive the tools with someone's
  session. Every HTTP request to ``/mcp`` is first checked as the API checks a request
  with its token, in process with the API's own parts (``forge_web.mcp_admission``:
  HTTPS, ``ALLOWED_HOSTS``, the token, the rates), and a refusal is answered as the API
  answers it (401 ``not_authenticated``, 400, 429 ``throttled`` with ``Retry-After``,
  503 ``database_unavailable``); the user admitted rides on the request's scope to its
  end, as an API request's ``request.auth`` does. A 401 names the endpoint's protected
  resource metadata (``WWW-Authenticate: Bearer resource_metadata="..."``, RFC 9728), where
  a host that speaks MCP's authorization flow finds Forge's authorization server.
- ``/mcp/gateway`` is ``forge.gateway.server``'s MCP server (the upstream servers'
  tools), with the same authentication and limits; its calls do not go through an inner
  REST request but into the functions ``/api/v1/gateway/...`` runs
  (``forge_web.mcp_gateway``: same checks, gate, audit and errors, as the admitted
  user), which saves a whole Django request per call.
- Stateless: no MCP session outlives its HTTP request, so any web process can answer
  any request (no sticky sessions), and nothing in memory has to be shared.
- The SDK's session manager runs for the life of the server: ``lifespan`` starts it
  (``forge_web.asgi`` routes the ASGI lifespan protocol to ``forge_web.mcp_startup``'s
  ``DeferredMcp``, which imports this module and builds the endpoint on the first
  ``/mcp`` request; ``forge_web.serve`` turns the protocol on). Bodies are bounded like every
  request (``forge_web.body_limit``) and read strictly (``forge_web.strict_json``: a
  repeated key or absurd nesting is refused before the SDK reads the message).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from typing import Any

import httpx
from asgiref.sync import ThreadSensitiveContext, sync_to_async
from asgiref.typing import ASGI3Application, ASGIReceiveCallable, ASGISendCallable, Scope
from django.conf import settings
from django.db import close_old_connections
from django.http import HttpResponse
from django.http.request import split_domain_port, validate_host
from mcp.server.context import ServerRequestContext
from mcp.server.mcpserver import Context
from mcp.server.transport_security import TransportSecuritySettings

from accounts.models import User
from forge.client import AsyncForgeClient
from forge.gateway.server import GatewayApi, build_gateway
from forge.mcp_server import build_server
from forge_web.body_limit import BodyLimit
from forge_web.mcp_admission import admit
from forge_web.mcp_gateway import InProcessGateway
from forge_web.mcp_path import GATEWAY_PATH, MCP_PATH, is_gateway
from forge_web.oauth_resource import metadata_path
from forge_web.strict_json import StrictJsonBodies

__all__ = ["McpEndpoint"]


class McpEndpoint:
    """The ``/mcp`` ASGI application, its calls going into ``django_app``."""

    def __init__(self, django_app: ASGI3Application) -> None:
        self._django = django_app
        self.server = build_server(self._client_for)
        self.gateway = build_gateway(self._gateway_client_for)
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        # The SDK's DNS-rebinding guard protects servers that trust whoever can reach
        # them; these trust only bearer tokens, and the API checks ALLOWED_HOSTS.
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
        starlette_app = self.server.streamable_http_app(
            streamable_http_path=MCP_PATH,
            stateless_http=True,
            max_request_body_size=limit,
            transport_security=security,
        )
        gateway_app = self.gateway.streamable_http_app(
            streamable_http_path=GATEWAY_PATH,
            stateless_http=True,
            max_request_body_size=limit,
            transport_security=security,
        )
        # Bounded first, then read as every JSON body is (forge_web.strict_json).
        self._app = BodyLimit(StrictJsonBodies(starlette_app), limit)
        self._gateway_app = BodyLimit(StrictJsonBodies(gateway_app), limit)

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """Runs the SDK's session managers (``/mcp``'s and the gateway's): enter it once,
        before serving (the site's lifespan does: ``forge_web.mcp_startup``)."""
        async with AsyncExitStack() as stack:
            await stack.enter_async_context(self.server.session_manager.run())
            await stack.enter_async_context(self.gateway.session_manager.run())
            yield

    async def __call__(
        self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> None:
        token = _bearer(scope)
        if token is None:
            if not _host_allowed(scope):  # the challenge names a URL on this host
                await _answer(send, *_refused(400, "Bad Request"))
                return
            detail = "An API token is required: Authorization: Bearer <token>"
            status, body, _ = _refused(401, detail)
            await _answer(send, status, body, _challenge(scope))
            return
        # A thread of its own for the request's database work, as Django gives a request:
        # the admission's and the gateway call's (which runs in this context, the SDK's
        # tasks inheriting it), on one connection, closed at the request's end.
        async with ThreadSensitiveContext():
            try:
                admitted = await sync_to_async(admit)(scope, token)
                if isinstance(admitted, HttpResponse):
                    await _answer(send, *_refusal(scope, admitted))
                    return
                scope = {**scope, _USER: admitted}  # type: ignore[assignment]  # as channels'
                if is_gateway(scope):
                    await self._gateway_app(scope, receive, send)
                    return
                # /mcp's tools make REST requests of their own, and may wait on them (up
                # to 600 s for an approval): this request keeps no connection meanwhile.
                await sync_to_async(close_old_connections)()
                await self._app(scope, receive, send)
            finally:
                await sync_to_async(close_old_connections)()

    def _client_for(self, ctx: Context[Any, Any]) -> AbstractAsyncContextManager[AsyncForgeClient]:
        return self._client_of(ctx.request_context.request)

    @asynccontextmanager
    async def _gateway_client_for(
        self, ctx: ServerRequestContext[Any]
    ) -> AsyncIterator[GatewayApi]:
        yield InProcessGateway(_request_user(ctx.request))

    @asynccontextmanager
    async def _client_of(self, request: object) -> AsyncIterator[AsyncForgeClient]:
        scope, token = _request_token(request)
        transport = self._transport(scope)
        async with AsyncForgeClient(_site(scope), token, transport=transport) as client:
            yield client

    def _transport(self, scope: Scope) -> httpx.ASGITransport:
        client = scope.get("client") or ("127.0.0.1", 0)
        return httpx.ASGITransport(app=self._django, client=(str(client[0]), int(client[1])))


_CHALLENGE = [(b"www-authenticate", b'Bearer realm="forge"')]
# Where the scope of an admitted request carries its user (forge_web.mcp_admission).
_USER = "forge.user"
# The headers of a refusal that tell the agent what to do: when to try again, where to.
_PASSED_ON = ("Retry-After", "Location")


def _request_user(request: object) -> User:
    """The user the HTTP request an MCP call came in was admitted as (by
    ``McpEndpoint.__call__``, the only way in)."""
    scope = getattr(request, "scope", None)
    if scope is None or _USER not in scope:
        raise RuntimeError("an MCP call on /mcp without its admitted HTTP request")
    return scope[_USER]  # type: ignore[no-any-return]


def _request_token(request: object) -> tuple[Scope, str]:
    """The scope and bearer token of the HTTP request an MCP call came in (one that
    passed ``McpEndpoint.__call__``, the only way in)."""
    scope = getattr(request, "scope", None)
    token = None if scope is None else _bearer(scope)
    if scope is None or token is None:
        raise RuntimeError("an MCP call on /mcp without its HTTP request or token")
    return scope, token


def _challenge(scope: Scope, error: str | None = None) -> list[tuple[bytes, bytes]]:
    """A 401's ``WWW-Authenticate``: where this endpoint's protected resource metadata is
    (RFC 9728 section 5.1), and with ``error`` why the token presented was refused."""
    endpoint = GATEWAY_PATH if is_gateway(scope) else MCP_PATH
    metadata = _site(scope) + metadata_path(endpoint)
    problem = f'error="{error}", ' if error else ""
    value = f'Bearer realm="forge", {problem}resource_metadata="{metadata}"'
    return [(b"www-authenticate", value.encode("latin-1"))]


def _bearer(scope: Scope) -> str | None:
    for name, value in scope.get("headers", ()):
        if name.lower() == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            token = token.strip()
            return token if scheme.lower() == "bearer" and token and token.isascii() else None
    return None


def _host_allowed(scope: Scope) -> bool:
    """Whether the request's Host is one of ``ALLOWED_HOSTS`` (the API checks it for
    requests with a token; a 401 without one must not name another site's URL)."""
    host = _site(scope).partition("://")[2]
    domain, _ = split_domain_port(host)
    return bool(domain) and validate_host(domain, settings.ALLOWED_HOSTS)


def _site(scope: Scope) -> str:
    """The URL the request came to (scheme and host), so the API's own host and HTTPS
    checks judge the inner calls as they would judge the agent's."""
    host = next(
        (value.decode("latin-1") for name, value in scope.get("headers", ()) if name == b"host"),
        None,
    )
    if host is None:
        server = scope.get("server") or ("localhost", None)
        host = str(server[0]) if server[1] is None else f"{server[0]}:{server[1]}"
    return f"{scope.get('scheme', 'http')}://{host}"


_Refusal = tuple[int, bytes, list[tuple[bytes, bytes]]]


def _refusal(scope: Scope, answer: HttpResponse) -> _Refusal:
    """The API's refusal ``answer`` as this endpoint sends it: a 401 with the challenge
    that names the endpoint's metadata, others with the headers that say when to try
    again or where."""
    if answer.status_code == 401:
        return 401, answer.content, _challenge(scope, error="invalid_token")
    headers = [
        (name.lower().encode("latin-1"), answer[name].encode("latin-1"))
        for name in _PASSED_ON
        if name in answer
    ]
    return answer.status_code, answer.content, headers


# The refusals of a request without a token, made here (no user to admit).
_CODES = {400: "bad_request", 401: "not_authenticated"}


def _refused(status: int, detail: str) -> _Refusal:
    body = {"detail": detail, "code": _CODES[status]}
    return status, json.dumps(body).encode(), _CHALLENGE if status == 401 else []


async def _answer(
    send: ASGISendCallable, status: int, body: bytes, headers: list[tuple[bytes, bytes]]
) -> None:
    headers = [
        *headers,
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
