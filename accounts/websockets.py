"""Websocket authentication: a bearer API token in the handshake's Authorization header
(for scripts), else the browser's session cookie. The scope gets the ``user`` and the
``credential`` that proved it (``accounts.sockets``), with which consumers have the
socket's access checked again while it stays open.

The user is resolved once per connection, in one database call on threads that keep
their connection (``accounts.offloop``), and ``send`` is passed through untouched:
Channels' session stack wraps every message a consumer sends (to save a session that
websockets never change), which a crowd of watchers paid for on every event.
"""

from __future__ import annotations

from http.cookies import CookieError, SimpleCookie
from importlib import import_module
from types import SimpleNamespace
from typing import Any

from django.conf import settings

from accounts.models import ApiToken
from accounts.offloop import DatabaseThreads
from accounts.outages import DATABASE, database_unavailable
from accounts.sockets import Credential


class WebsocketAuth:
    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        headers = dict(scope.get("headers", ()))
        scheme, _, value = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
        # A token that is presented decides alone: a bad one is anonymous, never the
        # session's user, as on the HTTP API.
        token = value.strip() if scheme.lower() == "bearer" else None
        cookie = headers.get(b"cookie", b"").decode("latin-1")
        try:
            user, credential = await _AUTH.run(_user_for, token, _session_key(cookie))
        except Exception as error:
            if not database_unavailable(error):
                raise
            # Refused before the handshake, logged once per outage (accounts.outages): the
            # page reconnects after its backoff.
            DATABASE.failed(error)
            await send({"type": "websocket.close", "code": 1013})
            return None
        return await self.inner({**scope, "user": user, "credential": credential}, receive, send)


def _session_key(cookie_header: str) -> str | None:
    try:
        cookies = SimpleCookie(cookie_header)
    except CookieError:
        return None
    morsel = cookies.get(settings.SESSION_COOKIE_NAME)
    return morsel.value if morsel is not None else None


_AUTH = DatabaseThreads("forge-ws-auth", threads=2)


def _user_for(token: str | None, session_key: str | None) -> tuple[Any, Credential | None]:
    from django.contrib.auth import get_user
    from django.contrib.auth.models import AnonymousUser

    if token is not None:
        found = ApiToken.objects.authenticate(token)
        if found is None:
            return AnonymousUser(), None
        return found.user, Credential(found.user_id, token_id=found.pk)
    if not session_key:
        return AnonymousUser(), None
    store = import_module(settings.SESSION_ENGINE).SessionStore
    # Django's own check of a session: its user, backend and session hash.
    user = get_user(SimpleNamespace(session=store(session_key)))  # type: ignore[arg-type]
    if not user.is_authenticated:
        return user, None
    return user, Credential(user.pk, session_key=session_key)


def WebsocketAuthStack(inner: Any) -> Any:  # noqa: N802  (named like Channels' stacks)
    return WebsocketAuth(inner)
