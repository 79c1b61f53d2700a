"""The inbox's live count: ``/ws/inbox/`` sends ``{"unread": n}`` when it connects and
whenever the number changes, for the signed-in person only.

A change is noticed two ways: a wake-up on the person's group (``reviews.live``, sent
when an item is written or marked in this process or through Redis) and a poll every
``FORGE_INBOX_POLL_SECONDS``, which carries what workers in other processes wrote when
the channel layer is in memory. Clients only listen; a refusal closes with 4403, and so
does the end of the person's access while the page is open (a revoked token, a logout:
``accounts.sockets``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings

from accounts.sockets import REVOKED, Watched, credential_of, guard
from reviews.inbox import unread_count
from reviews.live import group_name


class InboxConsumer(AsyncWebsocketConsumer):  # type: ignore[misc]
    async def connect(self) -> None:
        await self.accept()
        user = self.scope.get("user")  # resolved by accounts.websockets
        credential = credential_of(self.scope)
        if credential is None:
            await self.close(code=REVOKED)
            return
        self.user = user
        self.sent: int | None = None
        self.group = group_name(user.pk)
        if self.channel_layer is not None:
            with contextlib.suppress(Exception):  # no layer: the poll alone carries changes
                await self.channel_layer.group_add(self.group, self.channel_name)
        await self._send_count()
        self.poller = asyncio.create_task(self._poll())
        self.access: Watched | None = await guard().watch(credential, None, self._revoked)

    async def disconnect(self, code: int) -> None:
        await self._stop()
        access = getattr(self, "access", None)
        if access is not None:
            guard().forget(access)

    async def _stop(self) -> None:
        poller = getattr(self, "poller", None)
        if poller is not None:
            poller.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await poller
        if getattr(self, "group", None) and self.channel_layer is not None:
            with contextlib.suppress(Exception):
                await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive(self, text_data: Any = None, bytes_data: Any = None) -> None:
        """Clients only listen; anything they send is ignored."""

    async def _revoked(self) -> None:
        """The person's access ended (accounts.sockets)."""
        self.access = None
        await self._stop()
        await self.close(code=REVOKED)

    async def inbox_changed(self, message: dict[str, Any]) -> None:
        await self._send_count()

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(settings.FORGE_INBOX_POLL_SECONDS)
            await self._send_count()

    async def _send_count(self) -> None:
        count = await database_sync_to_async(unread_count)(self.user)
        if count != self.sent:
            self.sent = count
            await self.send(text_data=json.dumps({"unread": count}))
