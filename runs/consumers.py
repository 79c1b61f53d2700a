"""The live event stream of one run: ``/ws/runs/<run_id>/?after=<seq>``.

It sends every event after ``seq`` from the database, then new ones as they commit, in
``seq`` order with no gap and no duplicate. A message is one event (a JSON object), or a
JSON array of consecutive events when several are ready at once (a step's end and the
next one's start commit together). The events come from the run's feed
(``runs.feed``): one reader per run and process, which encodes each event once for every
watcher. A watcher that falls too far behind is closed with 4408 and reconnects with its
last seq; nothing it missed is lost, since the database is the source of truth.

The handshake is accepted before any database work, so a crowd connecting at once is
never refused for being slow to answer; who may watch is decided right after, and a
refusal closes with a code the client understands: 4403 (not allowed), 4404 (no such
run), 4400 (a bad ``after``), 1013 ("try again later": the database is away for the
moment, logged once per outage, not once per connection). A watcher whose access ends
while it watches (its token revoked, its session ended, ``run.view`` lost) is closed with
4403 within ``FORGE_WS_ACCESS_CHECK_SECONDS`` and sent nothing more (``accounts.sockets``).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any
from urllib.parse import parse_qs

from channels.consumer import get_handler_name
from channels.generic.websocket import AsyncWebsocketConsumer

from accounts.outages import DATABASE, database_unavailable
from accounts.sockets import REVOKED, Watched, credential_of, guard
from runs.feed import LAGGING, Subscription, frames_after, hub, run_exists

# No channel per watcher: the run's feed listens for wake-ups on behalf of all of them.
NO_CHANNEL_LAYER = "forge-no-layer"
# Events a message may carry when several are ready at once (a JSON array, in seq order).
MAX_BATCH = 100
# The close code of a connection refused while the database is away: come back later.
TRY_AGAIN_LATER = 1013


def _batch(frames: list[str]) -> str:
    """One message of encoded events: the event alone, or an array of them."""
    return frames[0] if len(frames) == 1 else "[" + ",".join(frames) + "]"


class RunEventsConsumer(AsyncWebsocketConsumer):  # type: ignore[misc]
    channel_layer_alias = NO_CHANNEL_LAYER

    async def connect(self) -> None:
        await self.accept()
        user = self.scope.get("user")  # resolved by accounts.websockets
        credential = credential_of(self.scope)
        if credential is None or not user.can("run.view"):
            await self.close(code=REVOKED)
            return
        self.run_id = int(self.scope["url_route"]["kwargs"]["run_id"])
        query = parse_qs(self.scope.get("query_string", b"").decode())
        try:
            after = max(0, int(query.get("after", ["0"])[0]))
        except ValueError:
            await self.close(code=4400)
            return
        feeds = hub()
        try:
            if self.run_id not in feeds.feeds and not await run_exists(self.run_id):
                await self.close(code=4404)
                return
            self.subscription: Subscription | None = await feeds.subscribe(self.run_id, after)
        except Exception as error:
            if not database_unavailable(error):
                raise
            DATABASE.failed(error)
            await self.close(code=TRY_AGAIN_LATER)
            return
        self.sender = asyncio.create_task(self._send(self.subscription, after))
        # Watched from here on (registered before watch's first await).
        self.access: Watched | None = await guard().watch(credential, "run.view", self._revoked)

    async def dispatch(self, message: dict[str, Any]) -> None:
        # Channels closes old database connections before every handler; this consumer
        # touches the database only through the feeds' own threads (runs.feed), so that
        # hop to the shared sync thread is skipped for every connect of a crowd.
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"no handler for message type {message['type']}")
        await handler(message)

    async def disconnect(self, code: int) -> None:
        await self._stop()
        access = getattr(self, "access", None)
        if access is not None:
            guard().forget(access)

    async def _stop(self) -> None:
        """Send nothing more and leave the run's feed."""
        sender = getattr(self, "sender", None)
        if sender is not None:
            sender.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await sender
        subscription = getattr(self, "subscription", None)
        if subscription is not None:
            hub().unsubscribe(self.run_id, subscription.watcher)
            self.subscription = None

    async def _revoked(self) -> None:
        """The watcher's access ended (accounts.sockets)."""
        self.access = None
        await self._stop()
        await self.close(code=REVOKED)

    async def receive(self, text_data: Any = None, bytes_data: Any = None) -> None:
        """Clients only listen; anything they send is ignored."""

    async def _send(self, subscription: Subscription, after: int) -> None:
        sent = after
        if subscription.backlog is None:  # too far behind the feed: read it once
            while sent < subscription.until:
                # Up to ``until`` only: what is newer comes through the queue.
                frames = [
                    f for f in await frames_after(self.run_id, sent) if f[0] <= subscription.until
                ]
                if not frames:
                    break
                for start in range(0, len(frames), MAX_BATCH):
                    chunk = frames[start : start + MAX_BATCH]
                    await self.send(text_data=_batch([frame for _, frame in chunk]))
                    sent = chunk[-1][0]
        else:
            for start in range(0, len(subscription.backlog), MAX_BATCH):
                chunk = subscription.backlog[start : start + MAX_BATCH]
                await self.send(text_data=_batch([frame for _, frame in chunk]))
                sent = chunk[-1][0]
        queue = subscription.watcher.queue
        while True:
            items = [await queue.get()]
            while not queue.empty() and len(items) < MAX_BATCH:
                items.append(queue.get_nowait())
            frames = [item[1] for item in items if item is not None and item[0] > sent]
            if frames:
                # Events committed together (a step's end, the next one's start) leave in
                # one message: a crowd costs a write per watcher per message, not per event.
                await self.send(text_data=_batch(frames))
                sent = max(item[0] for item in items if item is not None)
            if None in items:  # fell behind: reconnect with the last seq
                await self.close(code=LAGGING)
                return
