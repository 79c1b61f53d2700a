"""Signed webhooks: the body, its signature, the host allow list, one delivery attempt
and when the next one is due.

- The body is JSON: Forge's own shape (``kind``, ``title``, ``url``, ``actor``,
  ``comment``, ``plan``, ``version``, ``run``, ``step``, ``at``) or, for a webhook of
  format ``slack``, ``{"text": ...}`` as Slack's and compatible incoming webhooks read it.
  Either carries the absolute link to the exact page (``FORGE_BASE_URL``).
- ``X-Forge-Signature: sha256=<hex>`` is the HMAC-SHA256 of the exact body bytes with
  the webhook's secret; ``X-Forge-Delivery`` and ``X-Forge-Event`` name the delivery and
  its kind; a receiver recomputes the HMAC and compares in constant time.
- Like ``http_request`` (``forge.runners.http``), a webhook reaches only hosts on an allow
  list, its own: ``FORGE_WEBHOOK_ALLOWED_HOSTS`` (``host`` for any port, ``host:port`` for
  one). It is checked when an admin saves the webhook and again at every attempt;
  redirects are not followed (a 3xx is a failed attempt), no proxy or environment
  settings are used, the answer is read no further than its status.
- A failed attempt (no answer, a timeout, a status other than 2xx) is retried after
  ``FORGE_WEBHOOK_BACKOFF_SECONDS * 2**(attempt-1)`` seconds, up to
  ``FORGE_WEBHOOK_ATTEMPTS`` attempts; then the delivery is ``failed``. Every attempt is
  in the delivery's log.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import time
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import httpx
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from forge.errors import ForgeError
from reviews.models import DeliveryStatus, Webhook, WebhookDelivery, WebhookFormat

if TYPE_CHECKING:
    from reviews.notifications import Event, Subject

__all__ = [
    "SIGNATURE_HEADER",
    "WebhookNotAllowed",
    "absolute",
    "attempt",
    "backoff",
    "body_for",
    "check_url",
    "new_secret",
    "sign",
]

SIGNATURE_HEADER = "X-Forge-Signature"
TIMEOUT_SECONDS = 10.0


class WebhookNotAllowed(ForgeError):
    """A webhook URL outside the allow list, or not http(s)."""

    code = "webhook_host_not_allowed"


def new_secret() -> str:
    return secrets.token_urlsafe(32)


def sign(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def absolute(path: str) -> str:
    return settings.FORGE_BASE_URL.rstrip("/") + path


def allowed_hosts() -> frozenset[str]:
    return frozenset(host.strip().lower() for host in settings.FORGE_WEBHOOK_ALLOWED_HOSTS)


def check_url(url: str) -> httpx.URL:
    """``url`` parsed, or ``WebhookNotAllowed`` saying why it may not be reached."""
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise WebhookNotAllowed(f"not a URL: {exc}") from exc
    if parsed.scheme not in ("http", "https"):
        raise WebhookNotAllowed(f"scheme {parsed.scheme!r} is not allowed, only http and https")
    host = parsed.host.lower()
    if not host:
        raise WebhookNotAllowed("the URL names no host")
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    hosts = allowed_hosts()
    if host not in hosts and f"{host}:{port}" not in hosts:
        raise WebhookNotAllowed(
            f"host {host!r} (port {port}) is not on FORGE_WEBHOOK_ALLOWED_HOSTS"
        )
    return parsed


def body_for(hook: Webhook, event: Event, subject: Subject, title: str, url: str) -> str:
    link = absolute(url)
    if hook.format == WebhookFormat.SLACK:
        text = f"<{link}|{title}>"
        if event.comment:
            text += "\n> " + event.comment[:1000].replace("\n", "\n> ")
        return json.dumps({"text": text}, ensure_ascii=False)
    return json.dumps(
        {
            "kind": event.kind,
            "title": title,
            "url": link,
            "actor": event.actor,
            "comment": event.comment,
            "plan": subject.plan_id,
            "version": subject.version_number,
            "run": subject.run_id,
            "step": event.step_id or None,
            "at": timezone.now().isoformat(),
        },
        ensure_ascii=False,
        sort_keys=True,
    )


def backoff(attempts: int) -> timedelta:
    """How long after failed attempt number ``attempts`` (1-based) the next one waits."""
    return timedelta(seconds=settings.FORGE_WEBHOOK_BACKOFF_SECONDS * 2 ** (attempts - 1))


def attempt(delivery_id: int, *, now: datetime | None = None) -> WebhookDelivery:
    """Make one attempt at a pending delivery and record it; returns the delivery, whose
    ``status`` and ``next_attempt_at`` say what comes next."""
    delivery = WebhookDelivery.objects.select_related("webhook").get(pk=delivery_id)
    if delivery.status != DeliveryStatus.PENDING:
        return delivery
    hook = delivery.webhook
    body = delivery.body.encode()
    started = time.monotonic()
    status_code: int | None = None
    error = ""
    try:
        url = check_url(hook.url)
        if not hook.active:
            raise WebhookNotAllowed("the webhook was switched off")
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "Forge-Webhooks/1",
            SIGNATURE_HEADER: sign(hook.secret, body),
            "X-Forge-Event": delivery.kind,
            "X-Forge-Delivery": str(delivery.pk),
        }
        with httpx.Client(trust_env=False, follow_redirects=False, timeout=TIMEOUT_SECONDS) as c:
            response = c.post(url, content=body, headers=headers)
        status_code = response.status_code
        if not 200 <= status_code < 300:
            error = f"HTTP status {status_code}"
    except WebhookNotAllowed as exc:
        error = exc.message
    except httpx.HTTPError as exc:
        error = f"{type(exc).__name__}: {exc}"
    at = now or timezone.now()
    with transaction.atomic():
        locked = WebhookDelivery.objects.select_for_update().get(pk=delivery.pk)
        locked.attempts += 1
        locked.log = [*locked.log, {
            "at": at.isoformat(), "status_code": status_code, "error": error,
            "ms": round((time.monotonic() - started) * 1000, 1),
        }]  # fmt: skip
        if not error:
            locked.status, locked.delivered_at, locked.next_attempt_at = (
                DeliveryStatus.DELIVERED,
                at,
                None,
            )
        elif locked.attempts >= settings.FORGE_WEBHOOK_ATTEMPTS:
            locked.status, locked.next_attempt_at = DeliveryStatus.FAILED, None
        else:
            locked.next_attempt_at = at + backoff(locked.attempts)
        locked.save()
    return locked
