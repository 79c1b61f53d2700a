"""Forge's MCP tools over streamable HTTP at ``/mcp``, served by the web process.

The tools are ``forge.mcp_server``'s, the ones ``forge mcp`` serves over stdio. Here each
call goes into this process's own Django application (``httpx.ASGITransport``, no
network) as a REST request carrying the MCP request's bearer token, scheme, host and
client address: the API authenticates it, checks the user's permissions, refuses what the
gate refuses and writes the audit trail, exactly as for any API call, so an agent can do
nothing here that its token's user could not do with curl.

- Authentication: ``Authorization: Bearer <API token>`` only. Cookies are not accepted,
  so a page in a browser can never drive the tools with someone's session. Every HTTP
  request to ``/mcp`` is first checked by ``GET /api/v1/me`` with its token; a refusal
  is answered as the API answered it (401 ``not_authenticated``, 400 for a host outside
  ``ALLOWED_HOSTS``).
- Stateless: no MCP session outlives its HTTP request, so any web process can answer
  any request (no sticky sessions), and nothing in memory has to be shared.
- The SDK's session manager runs for the life of the server: ``lifespan`` starts it
  (``forge_web.asgi`` routes the ASGI lifespan protocol to ``forge_web.mcp_startup``'s
  ``DeferredMcp``, which imports this module and builds the endpoint on the first
  ``/mcp`` request; ``forge_web.serve`` turns the protocol on). Bodies are bounded like every
  request (``forge_web.body_limit``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import httpx
from django.conf import settings
from mcp.server.mcpserver import Context
from mcp.server.transport_security import TransportSecuritySettings

from forge.client import AsyncForgeClient
from forge.mcp_server import build_server
from forge_web.body_limit import BodyLimit
from forge_web.mcp_startup import MCP_PATH

__all__ = ["MCP_PATH", "McpEndpoint"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class McpEndpoint:
    """The ``/mcp`` ASGI application, its calls going into ``django_app``."""

    def __init__(self, django_app: ASGIApp) -> None:
        self._django = django_app
        self.server = build_server(self._client_for)
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        starlette_app = self.server.streamable_http_app(
            streamable_http_path=MCP_PATH,
            stateless_http=True,
            max_request_body_size=limit,
            # The SDK's DNS-rebinding guard protects servers that trust whoever can reach
            # them; this one trusts only bearer tokens, and the API checks ALLOWED_HOSTS.
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        self._app = BodyLimit(starlette_app, limit)

    def handles(self, scope: Scope) -> bool:
        path = str(scope.get("path", ""))
        return scope["type"] == "http" and (path == MCP_PATH or path.startswith(MCP_PATH + "/"))

    def lifespan(self) -> AbstractAsyncContextManager[None]:
        """Runs the SDK's session manager: enter it once, before serving."""
        return self.server.session_manager.run()

    def in_front_of(self, app: ASGIApp) -> ASGIApp:
        """An HTTP application that serves ``/mcp`` here and every other path by ``app``."""

        async def route(scope: Scope, receive: Receive, send: Send) -> None:
            await (self if self.handles(scope) else app)(scope, receive, send)

        return route

    def lifespan_app(self) -> ASGIApp:
        """The ASGI lifespan protocol's application: the session manager runs from the
        server's startup to its shutdown; a failure to start stops the server."""

        async def lifespan(scope: Scope, receive: Receive, send: Send) -> None:
            await receive()  # lifespan.startup
            started = False
            try:
                async with self.lifespan():
                    await send({"type": "lifespan.startup.complete"})
                    started = True
                    await receive()  # lifespan.shutdown
            except Exception as exc:
                phase = "shutdown" if started else "startup"
                await send({"type": f"lifespan.{phase}.failed", "message": repr(exc)})
                return
            await send({"type": "lifespan.shutdown.complete"})

        return lifespan

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        token = _bearer(scope)
        if token is None:
            detail = "An API token is required: Authorization: Bearer <token>"
            await _answer(send, *_refused(401, detail))
            return
        refusal = await self._refusal(scope, token)
        if refusal is not None:
            await _answer(send, *refusal)
            return
        await self._app(scope, receive, send)

    async def _refusal(self, scope: Scope, token: str) -> _Refusal | None:
        """Why the API refuses this token here (its answer to ``GET /me``), or None."""
        async with self._http(scope, token) as http:
            try:
                response = await http.get("/api/v1/me")
            except (httpx.InvalidURL, UnicodeError):  # a Host header no URL can hold
                return _refused(400, "Bad request")
        if response.status_code == 200:
            return None
        try:
            body = response.json()
        except ValueError:
            body = None
        if not (isinstance(body, dict) and "code" in body):
            # Django's own refusals (a host outside ALLOWED_HOSTS) are HTML pages.
            return _refused(response.status_code, response.reason_phrase or "Refused")
        challenges = response.headers.get_list("www-authenticate")
        headers = [(b"www-authenticate", value.encode()) for value in challenges]
        return response.status_code, response.content, headers

    @asynccontextmanager
    async def _client_for(self, ctx: Context[Any, Any]) -> AsyncIterator[AsyncForgeClient]:
        request = ctx.request_context.request
        scope = getattr(request, "scope", None)
        token = None if scope is None else _bearer(scope)
        if scope is None or token is None:  # only an HTTP request that passed __call__ comes
            raise RuntimeError("an MCP call on /mcp without its HTTP request or token")
        transport = self._transport(scope)
        async with AsyncForgeClient(_site(scope), token, transport=transport) as client:
            yield client

    def _http(self, scope: Scope, token: str) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            base_url=_site(scope),
            headers={"Authorization": f"Bearer {token}", "Accept": "application/json"},
            transport=self._transport(scope),
        )

    def _transport(self, scope: Scope) -> httpx.ASGITransport:
        client = scope.get("client") or ("127.0.0.1", 0)
        return httpx.ASGITransport(app=self._django, client=(str(client[0]), int(client[1])))


_CHALLENGE = [(b"www-authenticate", b'Bearer realm="forge"')]


def _bearer(scope: Scope) -> str | None:
    for name, value in scope.get("headers", ()):
        if name.lower() == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            token = token.strip()
            return token if scheme.lower() == "bearer" and token and token.isascii() else None
    return None


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
_CODES = {400: "bad_request", 401: "not_authenticated", 403: "permission_denied"}


def _refused(status: int, detail: str) -> _Refusal:
    body = {"detail": detail, "code": _CODES.get(status, "error")}
    return status, json.dumps(body).encode(), _CHALLENGE if status == 401 else []


async def _answer(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    headers = [
        *headers,
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
