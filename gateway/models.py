"""Held gateway calls (SPEC section 11): an unbound call that waits for a person, and then
its one forwarding and its stored answer."""

from __future__ import annotations

from datetime import datetime
from typing import Literal, get_args

from django.conf import settings
from django.db import models

HeldStatus = Literal["held", "approved", "rejected", "expired", "forwarded", "answered"]
HELD_STATUSES: tuple[str, ...] = get_args(HeldStatus)


class HeldCall(models.Model):
    """One call an agent's user asked for, by server, tool and arguments hash.

    ``held`` until a person decides (or its time runs out: ``expired``); ``approved`` then
    ``forwarded`` (by compare-and-swap: one request forwards it) and ``answered`` with the
    stored answer, which every later repeat replays. A call ``forwarded`` and never
    ``answered`` was sent and its answer lost: it is never sent again."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="held_calls"
    )
    server = models.CharField(max_length=64)
    tool = models.CharField(max_length=200)
    annotations = models.JSONField(default=dict)
    arguments = models.JSONField(default=dict)
    args_hash = models.CharField(max_length=64)
    side_effect = models.CharField(max_length=20)
    preview_text = models.TextField(blank=True)
    preview_hash = models.CharField(max_length=64, blank=True)
    # The approval rules that matched it when it was held, as the review card shows them.
    rules = models.JSONField(default=list)
    status = models.CharField(max_length=12, choices=[(s, s) for s in HELD_STATUSES])
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="decided_calls",
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    comment = models.TextField(blank=True)
    # Each person's approval so far ({"name", "teams"}), counted together by the rules.
    approvals = models.JSONField(default=list)
    # The rules version the approval was judged under, and its token's signature.
    rules_version = models.PositiveIntegerField(default=0)
    approval_signature = models.CharField(max_length=64, blank=True)
    forwarded_at = models.DateTimeField(null=True, blank=True)
    answered_at = models.DateTimeField(null=True, blank=True)
    answer = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["user", "tool", "args_hash"], name="held_call_repeat"),
            models.Index(fields=["status"], name="held_call_status"),
        ]

    def __str__(self) -> str:
        return f"held call {self.pk}: {self.tool} ({self.status})"

    def status_at(self, now: datetime) -> str:
        """Its status at ``now``: a held call past its time is ``expired``, though its row
        says so only once the agent asks again (``gateway.held``)."""
        if self.status == "held" and self.expires_at <= now:
            return "expired"
        return self.status
