"""Wake every process's websocket guard when someone's access may have ended.

``accounts.sockets`` closes open websockets whose credentials no longer hold; it checks
them at an interval, and at once when told. This module, on the floor that sees both
accounts and the channel layer's sender (``runs.publish``), tells it: after a token is
revoked, a user is updated (roles, password) or someone logs out, once that commits, an
``access.changed`` wake-up goes to the user's group (``accounts.sockets.group_name``).
A wake-up that is lost costs only the interval.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from django.contrib.auth.signals import user_logged_out
from django.db import transaction
from django.dispatch import receiver

from accounts.models import ApiToken
from accounts.signals import account_changed
from accounts.sockets import group_name
from runs.publish import wake_group

# The account changes that may end someone's access (token.created, say, cannot).
ENDING = frozenset({"token.revoked", "user.updated"})


def access_changed(user_id: int) -> None:
    """Tell every guard, once the current transaction commits, to check ``user_id``."""
    message = {"type": "access.changed", "user_id": user_id}
    transaction.on_commit(partial(wake_group, group_name(user_id), message))


@receiver(account_changed, dispatch_uid="forge_web.access_account_changed")
def _account_changed(*, action: str, object_type: str, object_id: str, **kwargs: Any) -> None:
    if action not in ENDING:
        return
    if object_type == "user":
        access_changed(int(object_id))
    elif object_type == "api_token":
        owner = ApiToken.objects.filter(pk=object_id).values_list("user_id", flat=True).first()
        if owner is not None:
            access_changed(owner)


@receiver(user_logged_out, dispatch_uid="forge_web.access_logged_out")
def _logged_out(*, user: Any, **kwargs: Any) -> None:
    if user is not None:  # None when the session had already ended
        access_changed(user.pk)
