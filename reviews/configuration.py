"""Changing who is told what, audited: a person's preferences, and the webhooks an admin
configures (``notification.manage``). A webhook's secret is made here and shown once, to
the admin who made it; the trail never holds it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import transaction

from accounts.permissions import ensure_permission
from audit.services import record
from forge.errors import ForgeError
from reviews.models import NotificationPreference, Webhook, WebhookFormat
from reviews.signals import KINDS
from reviews.webhooks import check_destination, new_secret

__all__ = ["UnknownKind", "create_webhook", "delete_webhook", "save_preferences",
           "update_webhook"]  # fmt: skip


class UnknownKind(ForgeError):
    code = "unknown_notification_kind"


def _kinds(kinds: Iterable[str]) -> list[str]:
    chosen = set(kinds)
    unknown = sorted(chosen - set(KINDS))
    if unknown:
        raise UnknownKind(f"unknown kind {unknown[0]!r}; kinds are {', '.join(KINDS)}")
    return [kind for kind in KINDS if kind in chosen]


def save_preferences(user: Any, kinds: Iterable[str], email: bool) -> NotificationPreference:
    chosen = _kinds(kinds)
    with transaction.atomic():
        row, _ = NotificationPreference.objects.select_for_update().get_or_create(
            user=user, defaults={"kinds": list(KINDS), "email": True}
        )
        before = {"kinds": list(row.kinds), "email": row.email}
        row.kinds, row.email = chosen, bool(email)
        row.save()
        record(user.username, "notifications.preferences_changed", "user", user.pk, {
            "before": before, "after": {"kinds": chosen, "email": row.email},
        })  # fmt: skip
    return row


def _format(value: str) -> str:
    if value not in WebhookFormat.values:
        raise ForgeError(
            f"unknown format {value!r}; formats are {', '.join(WebhookFormat.values)}",
            code="unknown_webhook_format",
        )
    return value


def _described(hook: Webhook) -> dict[str, Any]:
    return {"name": hook.name, "url": hook.url, "kinds": hook.kinds, "format": hook.format,
            "active": hook.active}  # fmt: skip


def create_webhook(
    user: Any, name: str, url: str, kinds: Iterable[str] = (), format: str = "forge"
) -> Webhook:
    ensure_permission(user, "notification.manage")
    check_destination(url)
    with transaction.atomic():
        hook = Webhook.objects.create(
            name=name.strip() or url, url=url, secret=new_secret(), kinds=_kinds(kinds),
            format=_format(format), created_by=user.username,
        )  # fmt: skip
        record(user.username, "webhook.created", "webhook", hook.pk, _described(hook))
    return hook


def update_webhook(user: Any, hook: Webhook, **changes: Any) -> Webhook:
    """Change ``name``, ``url``, ``kinds``, ``format`` or ``active``; ``rotate_secret``
    makes a new secret."""
    ensure_permission(user, "notification.manage")
    if "url" in changes:
        check_destination(changes["url"])
    if "kinds" in changes:
        changes["kinds"] = _kinds(changes["kinds"])
    if "format" in changes:
        _format(changes["format"])
    rotate = bool(changes.pop("rotate_secret", False))
    with transaction.atomic():
        locked = Webhook.objects.select_for_update().get(pk=hook.pk)
        before = _described(locked)
        for field in ("name", "url", "kinds", "format", "active"):
            if field in changes:
                setattr(locked, field, changes[field])
        if rotate:
            locked.secret = new_secret()
        locked.save()
        record(user.username, "webhook.updated", "webhook", locked.pk, {
            "before": before, "after": _described(locked), "rotated": rotate,
        })  # fmt: skip
    return locked


def delete_webhook(user: Any, hook: Webhook) -> None:
    ensure_permission(user, "notification.manage")
    with transaction.atomic():
        record(user.username, "webhook.deleted", "webhook", hook.pk, _described(hook))
        hook.delete()
