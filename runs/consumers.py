"""The live event stream of one run: ``/ws/runs/<run_id>/?after=<seq>``.

It sends every event after ``seq`` from the database, then new ones as they commit, in
``seq`` order with no gap and no duplicate. The database is the source of truth; a
group message is only a wake-up, and the consumer also polls, because Channels drops
group messages once a consumer's queue is full and an in-memory layer never carries a
worker process's wake-ups to the web process.
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings

from runs import events as event_rows
from runs.models import Run, RunEvent
from runs.publish import group_name

BATCH = 500


class RunEventsConsumer(AsyncJsonWebsocketConsumer):  # type: ignore[misc]
    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated or not await _can_view(user):
            await self.close(code=4403)
            return
        self.run_id = int(self.scope["url_route"]["kwargs"]["run_id"])
        if not await _run_exists(self.run_id):
            await self.close(code=4404)
            return
        query = parse_qs(self.scope.get("query_string", b"").decode())
        try:
            self.last_seq = max(0, int(query.get("after", ["0"])[0]))
        except ValueError:
            await self.close(code=4400)
            return
        self.sending = asyncio.Lock()
        await self.channel_layer.group_add(group_name(self.run_id), self.channel_name)
        await self.accept()
        await self._send_new()
        self.poller = asyncio.create_task(self._poll())

    async def disconnect(self, code: int) -> None:
        poller = getattr(self, "poller", None)
        if poller is not None:
            poller.cancel()
        if hasattr(self, "run_id"):
            await self.channel_layer.group_discard(group_name(self.run_id), self.channel_name)

    async def run_changed(self, message: dict[str, Any]) -> None:
        if message.get("seq", 0) > self.last_seq:
            await self._send_new()

    async def receive_json(self, content: Any, **kwargs: Any) -> None:
        """Clients only listen; anything they send is ignored."""

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(settings.FORGE_WS_POLL_SECONDS)
            await self._send_new()

    async def _send_new(self) -> None:
        async with self.sending:  # one sender at a time keeps seq order and no duplicates
            while True:
                batch = await _events_after(self.run_id, self.last_seq)
                for data in batch:
                    await self.send_json(data)
                    self.last_seq = int(data["seq"])  # type: ignore[call-overload]
                if len(batch) < BATCH:
                    return


@database_sync_to_async
def _can_view(user: Any) -> bool:
    return bool(user.can("run.view"))


@database_sync_to_async
def _run_exists(run_id: int) -> bool:
    return Run.objects.filter(pk=run_id).exists()


@database_sync_to_async
def _events_after(run_id: int, seq: int) -> list[dict[str, object]]:
    rows = RunEvent.objects.filter(run_id=run_id, seq__gt=seq).order_by("seq")[:BATCH]
    return [event_rows.to_data(row) for row in rows]
