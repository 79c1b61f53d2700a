"""The review loop's API: my inbox and my home (``/me/inbox``, ``/me/home``), my
notification settings, and the webhooks with their delivery log (admins,
``notification.manage``).

No ``from __future__ import annotations`` here: ninja reads the operations' annotations
at runtime.
"""

from datetime import datetime
from typing import Annotated, Any

from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import Field, Path, Query, Router, Schema, Status

from accounts.permissions import require_permission
from forge.ids import MAX_ID
from gateway.schemas import HeldCallOut
from reviews import configuration, inbox
from reviews.models import Webhook, WebhookDelivery
from reviews.notifications import kinds_for
from reviews.queue import waiting_count
from reviews.signals import KINDS

router = Router(tags=["inbox"])

Id = Annotated[int, Field(ge=1, le=MAX_ID)]
WebhookId = Annotated[int, Path(ge=1, le=MAX_ID)]


class InboxItemOut(Schema):
    id: int
    kind: str
    title: str
    actor: str
    comment: str
    url: str
    plan: int | None
    version: int | None
    run: int | None
    step: str | None
    created_at: datetime
    read: bool
    resolved: bool = Field(
        description="what it asked for no longer waits: never counted unread (see resolution)"
    )
    resolved_at: datetime | None
    resolution: str = Field(description='why, in words: "approved by grace", "superseded by v3"')
    held_call: HeldCallOut | None = Field(
        None, description="a call_held item's held call: server, tool, arguments, who asked"
    )


class InboxOut(Schema):
    unread: int
    waiting: int  # items waiting for my decision in the review queue
    items: list[InboxItemOut]


class ReadIn(Schema):
    ids: list[Id] | None = Field(
        None, max_length=1000, description="the items to mark; none: every item"
    )
    unread: bool = Field(False, description="mark them unread again")


class CountOut(Schema):
    unread: int
    changed: int


class HomeItemOut(Schema):
    title: str
    status: str
    label: str  # the status in words, as the pages say it
    url: str
    at: datetime | None = None
    author: str | None = None
    step: str | None = None


class HomeSectionOut(Schema):
    name: str
    title: str
    count: int
    items: list[HomeItemOut]
    more_url: str


class HomeOut(Schema):
    unread: int
    sections: list[HomeSectionOut]


class PreferencesIO(Schema):
    kinds: list[str] = Field(..., description=f"kinds told about, of: {', '.join(KINDS)}")
    email: bool


class WebhookIn(Schema):
    name: str = Field("", max_length=100)
    url: str = Field(..., max_length=500)
    kinds: list[str] = Field(default_factory=list, description="empty: every kind")
    format: str = Field("forge", description="forge or slack")
    active: bool = True


class WebhookPatch(Schema):
    name: str | None = Field(None, max_length=100)
    url: str | None = Field(None, max_length=500)
    kinds: list[str] | None = None
    format: str | None = None
    active: bool | None = None
    rotate_secret: bool = False


class WebhookOut(Schema):
    id: int
    name: str
    url: str
    kinds: list[str]
    format: str
    active: bool
    created_by: str
    created_at: datetime


class NewWebhookOut(WebhookOut):
    secret: str  # shown once, when made or rotated


class DeliveryOut(Schema):
    id: int
    webhook: int
    message_id: str  # the webhook-id header of every attempt
    kind: str
    status: str
    attempts: int
    log: list[dict[str, Any]]
    next_attempt_at: datetime | None
    created_at: datetime
    delivered_at: datetime | None
    body: str


def _user(request: HttpRequest) -> Any:
    return request.auth  # type: ignore[attr-defined]


@router.get("/me/inbox", response=InboxOut)
def my_inbox(request: HttpRequest, unread: bool = False, limit: int = inbox.INBOX_LIMIT) -> Any:
    """My inbox, newest first: versions waiting for my review, decisions and comments on my
    versions (with the comment), steps waiting for my approval, my runs that failed or
    need a replan."""
    user = _user(request)
    limit = max(1, min(limit, inbox.INBOX_LIMIT))
    items = inbox.items_for(user, unread_only=unread, limit=limit)
    calls = inbox.held_calls_of(items)
    return {"unread": inbox.unread_count(user), "waiting": waiting_count(user),
            "items": [inbox.item_data(item, calls.get(item.held_call_id or 0))
                      for item in items]}  # fmt: skip


@router.post("/me/inbox/read", response=CountOut)
def mark_read(request: HttpRequest, body: ReadIn) -> Any:
    user = _user(request)
    changed = inbox.mark_read(user, body.ids, unread=body.unread)
    return {"unread": inbox.unread_count(user), "changed": changed}


@router.get("/me/home", response=HomeOut)
def my_home(request: HttpRequest) -> Any:
    """What needs me: the home page's sections, each with its count, first items and link."""
    user = _user(request)
    return {"unread": inbox.unread_count(user),
            "sections": [section.to_data() for section in inbox.home_for(user)]}  # fmt: skip


@router.get("/me/notifications", response=PreferencesIO)
def my_preferences(request: HttpRequest) -> Any:
    user = _user(request)
    row = user.notification_preference if hasattr(user, "notification_preference") else None
    return {"kinds": kinds_for(user), "email": True if row is None else row.email}


@router.put("/me/notifications", response=PreferencesIO)
def save_preferences(request: HttpRequest, body: PreferencesIO) -> Any:
    row = configuration.save_preferences(_user(request), body.kinds, body.email)
    return {"kinds": row.kinds, "email": row.email}


def _hook(hook: Webhook, *, secret: bool = False) -> dict[str, Any]:
    data = {field: getattr(hook, field) for field in WebhookOut.model_fields}
    if secret:
        data["secret"] = hook.secret
    return data


@router.get("/webhooks", response=list[WebhookOut])
@require_permission("notification.manage")
def list_webhooks(request: HttpRequest) -> Any:
    return [_hook(hook) for hook in Webhook.objects.all()]


@router.post("/webhooks", response={201: NewWebhookOut})
@require_permission("notification.manage")
def create_webhook(request: HttpRequest, body: WebhookIn) -> Status:
    hook = configuration.create_webhook(
        _user(request), body.name, body.url, body.kinds, body.format
    )
    if not body.active:
        hook = configuration.update_webhook(_user(request), hook, active=False)
    return Status(201, _hook(hook, secret=True))


@router.patch("/webhooks/{webhook_id}", response=NewWebhookOut | WebhookOut)
@require_permission("notification.manage")
def update_webhook(request: HttpRequest, webhook_id: WebhookId, body: WebhookPatch) -> Any:
    hook = get_object_or_404(Webhook, pk=webhook_id)
    changes = body.dict(exclude_none=True)
    hook = configuration.update_webhook(_user(request), hook, **changes)
    return _hook(hook, secret=body.rotate_secret)


@router.delete("/webhooks/{webhook_id}", response={204: None})
@require_permission("notification.manage")
def delete_webhook(request: HttpRequest, webhook_id: WebhookId) -> Status:
    configuration.delete_webhook(_user(request), get_object_or_404(Webhook, pk=webhook_id))
    return Status(204, None)


@router.get("/webhook-deliveries", response=list[DeliveryOut])
@require_permission("notification.manage")
def list_deliveries(
    request: HttpRequest,
    webhook: Annotated[int | None, Query(ge=1, le=MAX_ID)] = None,
    limit: int = 100,
) -> Any:
    """The delivery log, newest first: each attempt's time, HTTP status and error."""
    rows = WebhookDelivery.objects.all()
    if webhook is not None:
        rows = rows.filter(webhook_id=webhook)
    return [
        {**{f: getattr(row, f) for f in DeliveryOut.model_fields if f != "webhook"},
         "webhook": row.webhook_id}
        for row in rows[: max(1, min(limit, 500))]
    ]  # fmt: skip
