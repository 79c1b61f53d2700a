"""Websocket authentication: a bearer API token in the handshake's Authorization header
(for scripts), else the browser's session (Channels' AuthMiddlewareStack)."""

from __future__ import annotations

from typing import Any

from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from channels.middleware import BaseMiddleware

from accounts.models import ApiToken


class BearerTokenMiddleware(BaseMiddleware):  # type: ignore[misc]
    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        headers = dict(scope.get("headers", ()))
        scheme, _, value = headers.get(b"authorization", b"").decode("latin-1").partition(" ")
        if scheme.lower() == "bearer":
            # A token that is presented decides alone: a bad one is anonymous, never the
            # session's user, as on the HTTP API.
            scope = {**scope, "user": await _user_for(value.strip())}
        return await super().__call__(scope, receive, send)


@database_sync_to_async
def _user_for(value: str) -> Any:
    from django.contrib.auth.models import AnonymousUser

    token = ApiToken.objects.authenticate(value)
    return token.user if token is not None else AnonymousUser()


def WebsocketAuthStack(inner: Any) -> Any:  # noqa: N802  (named like Channels' stacks)
    return AuthMiddlewareStack(BearerTokenMiddleware(inner))
