"""Wake-ups for the web processes' run feeds (``runs.feed``) after a run's events commit.

The message carries only the run and its last seq: feeds read the events themselves from
the database, so a wake-up that is dropped (Channels drops group messages when a
channel's queue is full) or never arrives (another process, no Redis) loses nothing: the
feeds also poll. A channel layer that fails (Redis away) is an outage, logged once when
it starts and once when it ends (``accounts.outages.REDIS``), not once per wake-up.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from concurrent.futures import Future
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import InMemoryChannelLayer, get_channel_layer

from accounts.outages import REDIS

logger = logging.getLogger(__name__)


def group_name(run_id: int) -> str:
    return f"run-{run_id}"


def run_changed(run_id: int, last_seq: int) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    message = {"type": "run.changed", "run_id": run_id, "seq": last_seq}
    if isinstance(layer, InMemoryChannelLayer):
        # An in-memory layer reaches only this process's feeds: none here means a
        # worker process, whose events the feeds' polling carries instead.
        if layer.groups.get(group_name(run_id)):
            _send_now(layer, group_name(run_id), message)
        return
    _PUBLISHER.send(layer, group_name(run_id), message)


def wake_group(group: str, message: dict[str, Any]) -> None:
    """Send ``message`` to ``group`` (another part's live feed, e.g. a person's inbox),
    the same way as a run's wake-up: best effort, never making the caller wait."""
    layer = get_channel_layer()
    if layer is None:
        return
    if isinstance(layer, InMemoryChannelLayer):
        if layer.groups.get(group):
            _send_now(layer, group, message)
        return
    _PUBLISHER.send(layer, group, message)


def _send_now(layer: Any, group: str, message: dict[str, Any]) -> None:
    try:
        async_to_sync(layer.group_send)(group, message)
    except Exception:  # a wake-up is an optimisation: consumers also poll the database
        logger.warning("could not publish to %s", group, exc_info=True)


# The least time between two sends of a process's wake-ups (seconds).
WAKE_INTERVAL = 0.02


class _Publisher:
    """One event loop in a daemon thread sends every wake-up, without making the
    committing thread wait: a network layer (Redis) then keeps one connection pool,
    where a loop per call would connect anew each time (milliseconds per step).

    Wake-ups for one run that pile up before the loop sends them leave as one, with the
    latest seq (a feed reads every event after its own seq anyway), and the loop sends at
    most once per ``WAKE_INTERVAL``: a send through Redis costs the worker about 1.5 ms
    of CPU, more than a no-op step itself, and a run whose steps each take a few
    milliseconds would otherwise send one per step (and its feeds read the database as
    often). A wake-up waits at most that long more."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()
        self._pending: dict[str, tuple[Any, dict[str, Any]]] = {}
        self._sent = float("-inf")  # when the loop last sent, by its clock

    def send(self, layer: Any, group: str, message: dict[str, Any]) -> None:
        with self._lock:
            first = not self._pending
            self._pending[group] = (layer, message)
        if first:
            self._ready().call_soon_threadsafe(self._schedule)

    def _schedule(self) -> None:
        assert self._loop is not None
        wait = self._sent + WAKE_INTERVAL - self._loop.time()
        if wait > 0:
            self._loop.call_later(wait, self._flush)
        else:
            self._flush()

    def _flush(self) -> None:
        assert self._loop is not None
        self._sent = self._loop.time()
        with self._lock:
            pending, self._pending = self._pending, {}
        for group, (layer, message) in pending.items():
            task = asyncio.ensure_future(layer.group_send(group, message))
            task.add_done_callback(_log_failure)

    def _ready(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(
                    target=loop.run_forever, daemon=True, name="forge-publisher"
                ).start()
                self._loop = loop
            return self._loop


def _log_failure(future: asyncio.Future[Any] | Future[Any]) -> None:
    error = future.exception()
    if error is None:
        REDIS.recovered()
    else:
        REDIS.failed(error)  # logged once per outage; the feeds poll meanwhile


_PUBLISHER = _Publisher()
