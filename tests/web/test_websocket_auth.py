"""Who a websocket connection is: a bearer API token, else the browser's session cookie;
a token that is presented decides alone; what the consumer sends passes untouched."""

from __future__ import annotations

from typing import Any

import pytest
from django.conf import settings
from django.test import Client

from accounts.websockets import WebsocketAuth

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


class Inner:
    def __init__(self) -> None:
        self.scope: dict[str, Any] = {}
        self.send: Any = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        self.scope, self.send = scope, send


async def _user(headers: list[tuple[bytes, bytes]]) -> tuple[Any, Inner]:
    inner = Inner()

    async def send(message: Any) -> None:  # pragma: no cover - never called here
        raise AssertionError(message)

    await WebsocketAuth(inner)({"type": "websocket", "headers": headers}, None, send)
    assert inner.send is send  # passed through untouched
    return inner.scope["user"], inner


def _session_cookie(user: Any) -> bytes:
    client = Client()
    client.force_login(user)
    name = settings.SESSION_COOKIE_NAME
    return f"{name}={client.cookies[name].value}".encode()


async def test_a_session_cookie_is_its_user(viewer):
    from asgiref.sync import sync_to_async

    cookie = await sync_to_async(_session_cookie)(viewer)

    user, _ = await _user([(b"cookie", cookie)])

    assert user.username == "viewer"


async def test_a_bearer_token_is_its_user_and_a_bad_one_is_nobody_even_with_a_session(
    viewer, approver, token_for
):
    from asgiref.sync import sync_to_async

    token = await sync_to_async(token_for)(approver)
    cookie = await sync_to_async(_session_cookie)(viewer)

    by_token, _ = await _user([(b"authorization", f"Bearer {token}".encode())])
    bad, _ = await _user([(b"authorization", b"Bearer forge_nope"), (b"cookie", cookie)])

    assert by_token.username == "approver"
    assert not bad.is_authenticated


async def test_no_credentials_or_a_forged_session_is_anonymous():
    nothing, _ = await _user([])
    forged, _ = await _user([(b"cookie", f"{settings.SESSION_COOKIE_NAME}=forged".encode())])

    assert not nothing.is_authenticated
    assert not forged.is_authenticated


async def test_the_scope_names_the_credential_the_socket_was_opened_with(viewer, token_for):
    from asgiref.sync import sync_to_async

    from accounts.models import ApiToken
    from accounts.sockets import Credential

    token = await sync_to_async(token_for)(viewer)
    cookie = await sync_to_async(_session_cookie)(viewer)
    stored = await sync_to_async(ApiToken.objects.get)(user=viewer)

    _, by_token = await _user([(b"authorization", f"Bearer {token}".encode())])
    _, by_session = await _user([(b"cookie", cookie)])
    _, nobody = await _user([])

    assert by_token.scope["credential"] == Credential(viewer.pk, token_id=stored.pk)
    session_key = cookie.decode().split("=", 1)[1]
    assert by_session.scope["credential"] == Credential(viewer.pk, session_key=session_key)
    assert nobody.scope["credential"] is None
