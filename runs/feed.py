"""Read once, send to many: one reader per watched run and process.

A crowd watching one run (a team, a wall display, an incident channel) must not cost a
database read and a JSON encoding per watcher per event. Each web process therefore keeps,
per event loop, a ``FeedHub``: for every run somebody watches, one ``RunFeed`` reads the
run's new events from the database (woken by the channel layer, polling as the fallback
that carries what a wake-up missed), encodes each once, and offers the same frame to
every ``Watcher`` of that run.

A watcher's queue is bounded. One that falls that far behind (a slow link, a stalled
tab) is closed with ``LAGGING`` (4408): the client reconnects with its last seq and reads
what it missed from the database, so a slow watcher never sees a gap and never holds the
others back. The feed keeps its latest frames (``RECENT``), so watchers that connect
close behind it (a page that loaded a snapshot a moment ago) catch up from memory; others
read their backlog from the database themselves, once.

Wake-ups arrive on one channel per hub, which joins the group of each run it feeds
(``runs.publish``). A channel layer that fails (Redis down, flushed) only slows the feeds
to their polling interval; the hub joins its groups again as soon as it can. Either
service going away (Redis, the database) is logged once when it starts and once when it
ends (``accounts.outages``), not once per poll.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import weakref
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from channels.layers import get_channel_layer
from django.conf import settings

from accounts.offloop import DatabaseThreads
from accounts.outages import DATABASE, REDIS, database_unavailable
from forge.backoff import Backoff
from runs import events as event_rows
from runs.models import Run
from runs.publish import group_name

__all__ = [
    "BATCH",
    "LAGGING",
    "RECENT",
    "FeedHub",
    "Subscription",
    "Watcher",
    "events_after",
    "frames_after",
    "hub",
    "run_exists",
]

logger = logging.getLogger(__name__)

BATCH = 500  # events per database read
RECENT = 2_000  # frames a feed keeps for watchers that connect close behind it
LAGGING = 4408  # close code: fell too far behind; reconnect with your last seq
# How long a feed nobody watches lives on (a page reload should find it warm).
IDLE_SECONDS = 15.0
# How often the hub joins its groups again: a flushed or restarted Redis forgets them.
REJOIN_SECONDS = 30.0
# How long the hub waits after the channel layer failed before it listens again.
LAYER_RETRY = Backoff(first_s=0.5, cap_s=10.0)

Frame = tuple[int, str]  # (seq, the event as JSON text)


@dataclass(eq=False)
class Watcher:
    """One connection's place in a feed: the frames it has yet to send, in seq order.
    ``None`` in the queue means it fell behind and must close with ``LAGGING``."""

    queue: asyncio.Queue[Frame | None]
    after: int  # frames up to here it has (or will read from the database itself)
    lagging: bool = False

    def offer(self, seq: int, frame: str) -> bool:
        """Queue a frame; False when the watcher fell behind (it is told to go)."""
        if self.lagging:
            return False
        try:
            self.queue.put_nowait((seq, frame))
        except asyncio.QueueFull:
            self.stop()
            return False
        return True

    def stop(self) -> None:
        """Tell the watcher to close and reconnect: what it has not sent is dropped, as
        it reads it again from the database after its last seq."""
        self.lagging = True
        while not self.queue.empty():
            self.queue.get_nowait()
        self.queue.put_nowait(None)


@dataclass(frozen=True)
class Subscription:
    """A watcher, and what it must send before its queue: frames from the feed's memory,
    or ``None`` when it must read events ``(after, until]`` from the database."""

    watcher: Watcher
    backlog: list[Frame] | None
    until: int


@dataclass(eq=False)
class RunFeed:
    run_id: int
    last_seq: int
    recent: deque[Frame] = field(default_factory=lambda: deque(maxlen=RECENT))
    watchers: set[Watcher] = field(default_factory=set)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None

    def subscribe(self, after: int, queue_size: int) -> Subscription:
        # No await in here: nothing the reader does can fall between the backlog and the
        # watcher's first queued frame.
        watcher = Watcher(asyncio.Queue(maxsize=queue_size), after)
        self.watchers.add(watcher)
        if after >= self.last_seq:
            return Subscription(watcher, [], self.last_seq)
        if self.recent and self.recent[0][0] <= after + 1:
            return Subscription(watcher, [f for f in self.recent if f[0] > after], self.last_seq)
        return Subscription(watcher, None, self.last_seq)

    def publish(self, frames: Iterable[Frame]) -> None:
        for seq, frame in frames:
            self.last_seq = seq
            self.recent.append((seq, frame))
            for watcher in tuple(self.watchers):
                if seq > watcher.after and not watcher.offer(seq, frame):
                    self.watchers.discard(watcher)


class FeedHub:
    """The feeds of one event loop, and the channel that wakes them."""

    def __init__(self) -> None:
        self.feeds: dict[int, RunFeed] = {}
        self._opening: dict[int, asyncio.Future[RunFeed]] = {}
        self._channel: str | None = None
        self._listener: asyncio.Task[None] | None = None

    async def subscribe(self, run_id: int, after: int) -> Subscription:
        feed = self.feeds.get(run_id) or await self._open(run_id)
        return feed.subscribe(after, settings.FORGE_WS_WATCHER_QUEUE)

    def unsubscribe(self, run_id: int, watcher: Watcher) -> None:
        feed = self.feeds.get(run_id)
        if feed is not None:
            feed.watchers.discard(watcher)

    def woken(self, run_id: int) -> None:
        feed = self.feeds.get(run_id)
        if feed is not None:
            feed.wake.set()

    async def _open(self, run_id: int) -> RunFeed:
        opening = self._opening.get(run_id)
        if opening is not None:  # another watcher is opening it: share the one feed
            return await opening
        future: asyncio.Future[RunFeed] = asyncio.get_running_loop().create_future()
        self._opening[run_id] = future
        try:
            feed = RunFeed(run_id, await _last_seq(run_id))
            feed.task = asyncio.create_task(self._read(feed), name=f"forge-feed-{run_id}")
            self.feeds[run_id] = feed
            await self._join(run_id)
            future.set_result(feed)
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: a failed open must not warn when unawaited
            raise
        finally:
            del self._opening[run_id]
        return feed

    async def _read(self, feed: RunFeed) -> None:
        """The feed's one reader: new events, encoded once, offered to every watcher."""
        idle = 0.0
        poll = settings.FORGE_WS_POLL_SECONDS
        try:
            while True:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(feed.wake.wait(), timeout=poll)
                feed.wake.clear()
                if not feed.watchers:
                    idle += poll
                    if idle >= IDLE_SECONDS:
                        return
                    continue
                idle = 0.0
                try:
                    frames = await frames_after(feed.run_id, feed.last_seq)
                except Exception as error:  # the database is back at a later poll
                    if database_unavailable(error):
                        DATABASE.failed(error)
                    else:
                        logger.warning(
                            "run %s: could not read new events", feed.run_id, exc_info=True
                        )
                    continue
                feed.publish(frames)
                if len(frames) == BATCH:
                    feed.wake.set()  # more behind these: read on at once
        finally:
            self.feeds.pop(feed.run_id, None)
            for watcher in feed.watchers:  # a feed that stops must not strand anyone
                watcher.stop()
            await self._leave(feed.run_id)

    # -- wake-ups ------------------------------------------------------------------------

    async def _join(self, run_id: int) -> None:
        layer = get_channel_layer()
        if layer is None:
            return
        try:
            if self._channel is None:
                # The default prefix, shared with every consumer's and the websocket
                # guard's channel (accounts.sockets): channels_redis reads a prefix's
                # process-local channels in one loop, and while it blocks reading one
                # prefix (up to 5 s) a channel of another prefix is not read at all.
                self._channel = await layer.new_channel()
                self._listener = asyncio.create_task(self._listen(layer), name="forge-feeds")
            await layer.group_add(group_name(run_id), self._channel)
        except Exception as error:  # no wake-ups for now: the feed polls
            REDIS.failed(error)

    async def _leave(self, run_id: int) -> None:
        layer = get_channel_layer()
        if layer is None or self._channel is None:
            return
        with contextlib.suppress(Exception):
            await layer.group_discard(group_name(run_id), self._channel)

    async def _listen(self, layer: object) -> None:
        """Receive wake-ups for every feed; survive the layer going away and coming back
        (a flushed Redis forgets group members: join again now and then)."""
        assert self._channel is not None
        failures = 0
        rejoin_at = asyncio.get_running_loop().time() + REJOIN_SECONDS
        while True:
            try:
                message = await asyncio.wait_for(
                    layer.receive(self._channel),  # type: ignore[attr-defined]
                    timeout=REJOIN_SECONDS,
                )
                failures = 0
                REDIS.recovered()
                run_id = message.get("run_id")
                if isinstance(run_id, int):
                    self.woken(run_id)
            except TimeoutError:
                pass
            except asyncio.CancelledError:
                raise
            except Exception as error:
                REDIS.failed(error)  # logged once per outage; feeds poll meanwhile
                failures += 1
                await asyncio.sleep(LAYER_RETRY.delay(failures))
                rejoin_at = 0.0
            now = asyncio.get_running_loop().time()
            if now >= rejoin_at:
                rejoin_at = now + REJOIN_SECONDS
                for run_id in tuple(self.feeds):
                    with contextlib.suppress(Exception):
                        await layer.group_add(group_name(run_id), self._channel)  # type: ignore[attr-defined]


_HUBS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, FeedHub] = weakref.WeakKeyDictionary()


def watcher_count() -> int:
    """Websockets watching runs in this process, over every event loop (``list`` copies
    each dict in one step, so a loop adding a watcher meanwhile cannot break the sum)."""
    return sum(
        len(feed.watchers) for found in list(_HUBS.values()) for feed in list(found.feeds.values())
    )


def hub() -> FeedHub:
    """This event loop's hub (a server runs one loop; tests may run many)."""
    loop = asyncio.get_running_loop()
    found = _HUBS.get(loop)
    if found is None:
        found = _HUBS[loop] = FeedHub()
    return found


# The feeds' reads run on a thread of their own, which keeps its database connection
# (accounts.offloop): a watched run is polled ten times a second.
_READER = DatabaseThreads("forge-feed-reader")


async def _last_seq(run_id: int) -> int:
    return await _READER.run(
        lambda: Run.objects.filter(pk=run_id).values_list("last_seq", flat=True).get()
    )


async def run_exists(run_id: int) -> bool:
    return await _READER.run(lambda: Run.objects.filter(pk=run_id).exists())


async def frames_after(run_id: int, seq: int) -> list[Frame]:
    """``events_after``, on the feeds' reader thread."""
    return await _READER.run(events_after, run_id, seq)


def events_after(run_id: int, seq: int) -> list[Frame]:
    """The next ``BATCH`` events after ``seq``, each encoded once."""
    events = event_rows.after(run_id, seq, BATCH)
    return [(event.seq, json.dumps(event.to_data(), default=str)) for event in events]
