"""Wake-ups for a person's open pages when their inbox changes (``/ws/inbox/``,
``reviews.consumers``): a message to the group ``inbox-<user id>`` on the channel layer,
sent the way a run's wake-ups are (``runs.publish``). It carries nothing but the fact;
the consumer counts from the database, and polls too, so a wake-up lost or sent from
another process (a worker, with no Redis) costs only the polling interval."""

from __future__ import annotations

from runs.publish import wake_group


def group_name(user_id: int) -> str:
    return f"inbox-{user_id}"


def inbox_changed(user_id: int) -> None:
    wake_group(group_name(user_id), {"type": "inbox.changed"})
