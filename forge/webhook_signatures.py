"""Standard Webhooks signatures (https://www.standardwebhooks.com/): how Forge signs each
webhook delivery, and how a receiver checks one.

Every attempt carries three headers:

- ``webhook-id``: the message's id, the same on every attempt of it, so a receiver that
  already handled it can drop a repeat;
- ``webhook-timestamp``: when the attempt was signed, in Unix seconds;
- ``webhook-signature``: ``v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">``, or
  several such, separated by spaces.

The secret is ``whsec_`` followed by the base64 of the key's bytes. Because the id and
the timestamp are signed with the body, a captured request cannot be sent again later as
new: a receiver refuses a timestamp more than ``TOLERANCE`` away from its clock, and
dedupes by id within it. The HMAC and the checks are the reference library's
(``standardwebhooks``); any Standard Webhooks library in any language verifies the same.
"""

from __future__ import annotations

import base64
import secrets
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta

from standardwebhooks import Webhook, WebhookVerificationError
from standardwebhooks.webhooks import EmptyWebhookSecretError

from forge.errors import ForgeError

__all__ = [
    "SECRET_PREFIX",
    "TOLERANCE",
    "SignatureInvalid",
    "new_secret",
    "signed_headers",
    "verify",
]

SECRET_PREFIX = "whsec_"
# The reference library's window, both ways, and the standard's recommendation.
TOLERANCE = timedelta(minutes=5)


class SignatureInvalid(ForgeError, ValueError):
    """A webhook request whose signature does not verify: missing headers, another
    secret, a changed id, timestamp or body, or a timestamp outside ``TOLERANCE``."""

    code = "webhook_signature_invalid"


def new_secret() -> str:
    """A fresh secret: ``whsec_`` and the base64 of 32 random bytes."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def signed_headers(secret: str, message_id: str, body: bytes, *, at: datetime) -> dict[str, str]:
    """The three headers of one attempt to send ``body`` as message ``message_id``, signed
    at ``at`` (aware; a naive one is read as UTC)."""
    return {
        "webhook-id": message_id,
        "webhook-timestamp": str(int(at.timestamp())),
        "webhook-signature": Webhook(secret).sign(message_id, at, body),
    }


def verify(
    secret: str,
    body: bytes,
    headers: Mapping[str, str],
    *,
    tolerance: timedelta = TOLERANCE,
    now: datetime | None = None,
) -> None:
    """For a receiver: return if ``headers`` (names in any case) sign exactly ``body``
    with ``secret`` at a time within ``tolerance`` of ``now`` (default: the clock); else
    raise ``SignatureInvalid`` saying why. Pass the body's bytes as received, before any
    JSON parsing. ``tolerance`` may be shorter than ``TOLERANCE``, never longer (the
    library checks its own window too): ``ValueError``."""
    if not timedelta(0) < tolerance <= TOLERANCE:
        raise ValueError(f"tolerance must be more than 0 and at most {TOLERANCE}, not {tolerance}")
    stamp = {name.lower(): value for name, value in headers.items()}.get("webhook-timestamp", "")
    try:
        signed_at = datetime.fromtimestamp(int(stamp), UTC)
    except (ValueError, OverflowError, OSError):
        raise SignatureInvalid(
            f"the webhook-timestamp header is not a time in Unix seconds: {stamp[:40]!r}"
        ) from None
    age = (now or datetime.now(UTC)) - signed_at
    if abs(age) > tolerance:
        when, way = ("too old", "ago") if age > timedelta(0) else ("too new", "ahead")
        raise SignatureInvalid(
            f"the message is {when}: signed {abs(age)} {way}, more than the {tolerance} allowed"
        )
    try:
        Webhook(secret).verify(body, dict(headers), json_parse=False)
    except (WebhookVerificationError, EmptyWebhookSecretError) as exc:
        raise SignatureInvalid(f"the webhook signature does not verify: {exc}") from exc
