"""Review threads on plan versions, as on a pull request: a reviewer (or the author)
comments on one step or on the whole version, others reply, and a thread is resolved (and
may be reopened).

A thread belongs to the version it was opened on. It is shown on that version and on
every later version descended from it (``parent`` links), where it is *outdated* once its
step changed or was removed (``reviews.threads``): comments carry over where the step is
unchanged, as a pull request's comments stay on lines nobody touched.

And what the review loop keeps about telling people: each person's inbox items
(``Notification``), what they want to hear (``NotificationPreference``), the webhooks an
admin configured and every attempt to deliver to them (``WebhookDelivery``).
"""

from __future__ import annotations

import secrets

from django.conf import settings
from django.db import models

from plans.models import PlanVersion
from reviews.signals import KINDS

# The longest comment kept (the API refuses longer ones with 422).
MAX_COMMENT = 10_000
# A step id as the plan format allows it (forge.plan.limits), with room to spare.
MAX_STEP_ID = 200


class Thread(models.Model):
    version = models.ForeignKey(
        PlanVersion, on_delete=models.CASCADE, related_name="review_threads"
    )
    step_id = models.CharField(max_length=MAX_STEP_ID, blank=True)  # "": the whole version
    opened_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="review_threads"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    resolved = models.BooleanField(default=False)
    resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    resolved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [models.Index(fields=["version", "step_id"])]

    def __str__(self) -> str:
        return f"thread {self.pk} on {self.step_id or 'the version'}"


class Comment(models.Model):
    thread = models.ForeignKey(Thread, on_delete=models.CASCADE, related_name="comments")
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="review_comments"
    )
    body = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]


KIND_CHOICES = [(kind, kind.replace("_", " ")) for kind in KINDS]


class Notification(models.Model):
    """One item of one person's inbox: what happened, who did it, what it concerns and the
    exact page to open. Unread until the person opens or marks it.

    An item that asks the person to act (``reviews.signals.ASKS``) is *resolved* once what
    it asks for no longer waits (``reviews.resolution``): ``resolved_at`` and the
    ``resolution`` in words ("approved by grace", "superseded by v3"). A resolved item is
    shown struck through and is never counted as unread."""

    recipient = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notifications"
    )
    kind = models.CharField(max_length=32, choices=KIND_CHOICES)
    actor = models.CharField(max_length=150, blank=True)
    # Ids, not foreign keys: an inbox item outlives nothing, and reads no joins.
    plan_id = models.BigIntegerField(null=True, blank=True)
    version_id = models.BigIntegerField(null=True, blank=True)
    version_number = models.PositiveIntegerField(null=True, blank=True)
    run_id = models.BigIntegerField(null=True, blank=True)
    step_id = models.CharField(max_length=64, blank=True)
    held_call_id = models.BigIntegerField(null=True, blank=True)  # gateway.HeldCall
    title = models.CharField(max_length=300)
    comment = models.TextField(blank=True)
    url = models.CharField(max_length=300)  # the exact page, site-relative
    created_at = models.DateTimeField(auto_now_add=True)
    read_at = models.DateTimeField(null=True, blank=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolution = models.CharField(max_length=200, blank=True)  # why it no longer waits

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["recipient", "read_at"]),
            # The asks still open, found by what changed (a plan's versions, a run).
            models.Index(
                fields=["plan_id"], condition=models.Q(resolved_at__isnull=True),
                name="notification_open_by_plan",
            ),
            models.Index(
                fields=["run_id"], condition=models.Q(resolved_at__isnull=True),
                name="notification_open_by_run",
            ),
            models.Index(
                fields=["held_call_id"], condition=models.Q(resolved_at__isnull=True),
                name="notification_open_by_call",
            ),
        ]  # fmt: skip

    def __str__(self) -> str:
        return f"{self.kind} for {self.recipient_id}"


class NotificationPreference(models.Model):
    """What one person wants to hear about. Without a row: every kind, e-mail on."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notification_preference"
    )
    kinds = models.JSONField(default=list)  # the kinds they are told about
    email = models.BooleanField(default=True)
    updated_at = models.DateTimeField(auto_now=True)


class WebhookFormat(models.TextChoices):
    FORGE = "forge"  # {"kind", "title", "url", ...}
    SLACK = "slack"  # {"text": ...}: Slack's and compatible incoming webhooks


class Webhook(models.Model):
    """An endpoint an admin configured; every delivery is signed with its secret."""

    name = models.CharField(max_length=100)
    url = models.URLField(max_length=500)
    secret = models.CharField(max_length=128)  # whsec_ + base64 (Standard Webhooks)
    kinds = models.JSONField(default=list)  # empty: every kind
    format = models.CharField(
        max_length=10, choices=WebhookFormat.choices, default=WebhookFormat.FORGE
    )
    active = models.BooleanField(default=True)
    created_by = models.CharField(max_length=150)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return self.name

    def wants(self, kind: str) -> bool:
        return self.active and (not self.kinds or kind in self.kinds)


class DeliveryStatus(models.TextChoices):
    PENDING = "pending"  # waiting for its next attempt
    DELIVERED = "delivered"
    FAILED = "failed"  # gave up after the last attempt


def new_message_id() -> str:
    return f"msg_{secrets.token_hex(16)}"


class WebhookDelivery(models.Model):
    """One event sent to one webhook: the exact body signed, each attempt's outcome, when
    the next attempt is due. The delivery log admins read."""

    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    # Standard Webhooks' webhook-id: the same on every attempt, so a receiver drops repeats.
    message_id = models.CharField(max_length=40, unique=True, default=new_message_id)
    kind = models.CharField(max_length=32, choices=KIND_CHOICES)
    # What the news is about ("kind:version:run:step"), so the same news goes out once.
    news = models.CharField(max_length=200, db_index=True)
    body = models.TextField()  # exactly the bytes signed and sent (UTF-8)
    status = models.CharField(
        max_length=10, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING
    )
    attempts = models.PositiveIntegerField(default=0)
    # [{"at", "status_code", "error", "ms"}, ...]: every attempt, oldest first
    log = models.JSONField(default=list)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
