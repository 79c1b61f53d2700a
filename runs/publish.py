"""Wake-ups for websocket consumers after a run's events commit.

The message carries only the run and its last seq: consumers read the events themselves
from the database, so a wake-up that is dropped (Channels drops group messages when a
consumer's queue is full) or never arrives (another process, no Redis) loses nothing.
"""

from __future__ import annotations

import logging

from asgiref.sync import async_to_sync
from channels.layers import InMemoryChannelLayer, get_channel_layer

logger = logging.getLogger(__name__)


def group_name(run_id: int) -> str:
    return f"run-{run_id}"


def run_changed(run_id: int, last_seq: int) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    if isinstance(layer, InMemoryChannelLayer) and not layer.groups.get(group_name(run_id)):
        # An in-memory layer reaches only this process's consumers, and there are none
        # for this run here (a worker process): the consumers' polling carries it.
        return
    try:
        async_to_sync(layer.group_send)(
            group_name(run_id), {"type": "run.changed", "seq": last_seq}
        )
    except Exception:  # a wake-up is an optimisation: consumers also poll the database
        logger.warning("could not publish run %s seq %s", run_id, last_seq, exc_info=True)
