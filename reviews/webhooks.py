"""Signed webhooks: the body, its signature, the host allow list, one delivery attempt
and when the next one is due.

- The body is JSON: Forge's own shape (``kind``, ``title``, ``url``, ``actor``,
  ``comment``, ``plan``, ``version``, ``run``, ``step``, ``at``) or, for a webhook of
  format ``slack``, ``{"text": ...}`` as Slack's and compatible incoming webhooks read it.
  Either carries the absolute link to the exact page (``FORGE_BASE_URL``).
- Every attempt is signed the Standard Webhooks way (``forge.webhook_signatures``):
  ``webhook-id`` (the delivery's message id, the same on every attempt),
  ``webhook-timestamp`` (when this attempt was signed) and ``webhook-signature`` (HMAC-SHA256
  of id, timestamp and body with the webhook's ``whsec_`` secret), so a receiver refuses a
  request replayed after its tolerance; ``X-Forge-Event`` names the kind.
- Like ``http_request`` (``forge.runners.http``), a webhook reaches only hosts on an allow
  list, its own: ``FORGE_WEBHOOK_ALLOWED_HOSTS`` (``host`` for any port, ``host:port`` for
  one), and only public addresses unless the address itself is listed
  (``forge.netguard``: the name is resolved once and the connection made to the address
  checked). Both are checked when an admin saves the webhook and again at every attempt;
  redirects are not followed (a 3xx is a failed attempt), no proxy or environment
  settings are used, the answer is read no further than its status.
- A failed attempt (no answer, a timeout, a status other than 2xx) is retried after
  ``FORGE_WEBHOOK_BACKOFF_SECONDS`` doubled per failed attempt, never more than
  ``FORGE_WEBHOOK_BACKOFF_MAX_SECONDS``, less up to a fifth at random (``forge.backoff``),
  up to ``FORGE_WEBHOOK_ATTEMPTS`` attempts; then the delivery is ``failed`` and its last
  log entry says it gave up. Every attempt is in the delivery's log.
"""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta

import httpx
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from forge.backoff import Backoff
from forge.errors import ForgeError
from forge.guarded_http import guarded_transport
from forge.netguard import AddressAllowList, AddressNotAllowed, resolve
from forge.webhook_signatures import new_secret, signed_headers
from reviews.links import absolute
from reviews.models import DeliveryStatus, Webhook, WebhookDelivery, WebhookFormat
from reviews.signals import Event, Subject

__all__ = [
    "WebhookNotAllowed",
    "attempt",
    "backoff",
    "body_for",
    "check_destination",
    "check_url",
    "new_secret",
]

TIMEOUT_SECONDS = 10.0


class WebhookNotAllowed(ForgeError):
    """A webhook URL outside the allow list, or not http(s)."""

    code = "webhook_host_not_allowed"




def allowed_hosts() -> frozenset[str]:
    return frozenset(host.strip().lower() for host in settings.FORGE_WEBHOOK_ALLOWED_HOSTS)


def check_url(url: str) -> httpx.URL:
    """``url`` parsed, or ``WebhookNotAllowed`` saying why it may not be reached. The
    address is checked where the connection is made (``attempt``)."""
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


def check_destination(url: str) -> httpx.URL:
    """``check_url``, and the addresses its host resolves to now (``forge.netguard``), so
    an admin saving a webhook hears at once that its name leads inside. What counts is
    still the check at each attempt: a name's DNS can change after it was saved."""
    parsed = check_url(url)
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        resolve(parsed.host, port, AddressAllowList.parse(allowed_hosts()))
    except AddressNotAllowed as exc:
        raise WebhookNotAllowed(exc.message) from exc
    except OSError as exc:
        raise WebhookNotAllowed(
            f"host {parsed.host!r} does not resolve: {exc}", code="webhook_host_unresolved"
        ) from exc
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
            "held_call": event.held_call_id,
            "at": timezone.now().isoformat(),
        },
        ensure_ascii=False,
        sort_keys=True,
    )


def backoff(attempts: int) -> timedelta:
    """How long after failed attempt number ``attempts`` (1-based) the next one waits."""
    wait = Backoff(
        first_s=settings.FORGE_WEBHOOK_BACKOFF_SECONDS,
        cap_s=settings.FORGE_WEBHOOK_BACKOFF_MAX_SECONDS,
    )
    return timedelta(seconds=wait.delay(attempts))


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
            "X-Forge-Event": delivery.kind,
            # Signed now, when it is sent (not at ``now``, a time the caller schedules by):
            # the receiver compares it with its own clock.
            **signed_headers(hook.secret, delivery.message_id, body, at=timezone.now()),
        }
        with httpx.Client(
            transport=guarded_transport(allowed_hosts()),  # each address checked (netguard)
            trust_env=False, follow_redirects=False, timeout=TIMEOUT_SECONDS,
        ) as client:  # fmt: skip
            response = client.post(url, content=body, headers=headers)
        status_code = response.status_code
        if not 200 <= status_code < 300:
            error = f"HTTP status {status_code}"
    except (WebhookNotAllowed, AddressNotAllowed) as exc:
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
            locked.log[-1]["error"] += f"; gave up after {locked.attempts} attempts"
        else:
            locked.next_attempt_at = at + backoff(locked.attempts)
        locked.save()
    return locked
