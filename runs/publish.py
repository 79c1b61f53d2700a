"""Wake-ups for the web processes' run feeds (``runs.feed``) after a run's events commit.

The message carries only the run and its last seq: feeds read the events themselves from
the database, so a wake-up that is dropped (Channels drops group messages when a
channel's queue is full) or never arrives (another process, no Redis) loses nothing: the
feeds also poll.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from concurrent.futures import Future
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import InMemoryChannelLayer, get_channel_layer

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


class _Publisher:
    """One event loop in a daemon thread sends every wake-up, without making the
    committing thread wait: a network layer (Redis) then keeps one connection pool,
    where a loop per call would connect anew each time (milliseconds per step)."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()

    def send(self, layer: Any, group: str, message: dict[str, Any]) -> None:
        future = asyncio.run_coroutine_threadsafe(layer.group_send(group, message), self._ready())
        future.add_done_callback(_log_failure)

    def _ready(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(
                    target=loop.run_forever, daemon=True, name="forge-publisher"
                ).start()
                self._loop = loop
            return self._loop


def _log_failure(future: Future[Any]) -> None:
    if future.exception() is not None:
        logger.warning("could not publish a wake-up", exc_info=future.exception())


_PUBLISHER = _Publisher()
