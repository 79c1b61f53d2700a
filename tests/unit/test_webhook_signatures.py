"""Standard Webhooks signatures: what Forge sends verifies, with this module and with the
reference library; a changed body, id or timestamp, another secret or an old timestamp
does not."""

from __future__ import annotations

import base64
import hashlib
import hmac
from datetime import UTC, datetime, timedelta

import pytest
import standardwebhooks

from forge.webhook_signatures import (
    TOLERANCE,
    SignatureInvalid,
    new_secret,
    signed_headers,
    verify,
)

BODY = b'{"kind": "version_rejected", "title": "caf\xc3\xa9"}'


def _now() -> datetime:
    return datetime.now(UTC)


def test_a_secret_is_whsec_and_base64_of_32_random_bytes():
    secret = new_secret()

    assert secret.startswith("whsec_")
    assert len(base64.b64decode(secret.removeprefix("whsec_"), validate=True)) == 32
    assert new_secret() != secret


def test_the_signature_is_hmac_sha256_of_id_timestamp_and_body_in_base64():
    secret = new_secret()
    at = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)

    headers = signed_headers(secret, "msg_1", BODY, at=at)

    key = base64.b64decode(secret.removeprefix("whsec_"))
    digest = hmac.new(key, b"msg_1.1767323045." + BODY, hashlib.sha256).digest()
    assert headers == {
        "webhook-id": "msg_1",
        "webhook-timestamp": "1767323045",
        "webhook-signature": "v1," + base64.b64encode(digest).decode(),
    }


def test_what_forge_signs_verifies_here_and_with_the_reference_library():
    secret = new_secret()
    headers = signed_headers(secret, "msg_2", BODY, at=_now())

    verify(secret, BODY, headers)
    standardwebhooks.Webhook(secret).verify(BODY, headers, json_parse=False)


@pytest.mark.parametrize(
    "tamper",
    [
        lambda h, b, s: (h, b + b" ", s),
        lambda h, b, s: ({**h, "webhook-id": "msg_other"}, b, s),
        lambda h, b, s: ({**h, "webhook-timestamp": str(int(h["webhook-timestamp"]) + 1)}, b, s),
        lambda h, b, s: (h, b, new_secret()),
        lambda h, b, s: ({k: v for k, v in h.items() if k != "webhook-signature"}, b, s),
    ],
    ids=["body", "id", "timestamp", "secret", "no signature"],
)
def test_anything_changed_is_refused(tamper):
    secret = new_secret()
    headers, body, key = tamper(signed_headers(secret, "msg_3", BODY, at=_now()), BODY, secret)

    with pytest.raises(SignatureInvalid) as refused:
        verify(key, body, headers)

    assert refused.value.code == "webhook_signature_invalid"


@pytest.mark.parametrize("offset", [TOLERANCE + timedelta(seconds=5), -TOLERANCE * 3])
def test_a_replay_signed_outside_the_tolerance_is_refused(offset):
    secret = new_secret()
    headers = signed_headers(secret, "msg_4", BODY, at=_now() - offset)

    with pytest.raises(SignatureInvalid, match="too (old|new)"):
        verify(secret, BODY, headers)


def test_a_receiver_may_ask_for_a_shorter_tolerance_but_not_a_longer_one():
    secret = new_secret()
    signed_at = _now()
    headers = signed_headers(secret, "msg_6", BODY, at=signed_at)
    a_minute_later = signed_at + timedelta(minutes=1)

    verify(secret, BODY, headers, now=a_minute_later)
    with pytest.raises(SignatureInvalid, match="too old"):
        verify(secret, BODY, headers, tolerance=timedelta(seconds=30), now=a_minute_later)
    with pytest.raises(ValueError, match="at most 0:05:00"):
        verify(secret, BODY, headers, tolerance=timedelta(minutes=10))


@pytest.mark.parametrize("stamp", ["", "soon", "1.5e99"])
def test_a_timestamp_that_is_not_unix_seconds_is_refused(stamp):
    secret = new_secret()
    headers = signed_headers(secret, "msg_7", BODY, at=_now()) | {"webhook-timestamp": stamp}

    with pytest.raises(SignatureInvalid, match="webhook-timestamp"):
        verify(secret, BODY, headers)


def test_one_of_several_signatures_is_enough_and_header_names_ignore_case():
    secret = new_secret()
    headers = signed_headers(secret, "msg_5", BODY, at=_now())
    rotated = "v1,bm90IGEgc2lnbmF0dXJl " + headers["webhook-signature"]

    verify(secret, BODY, {name.upper(): value for name, value in headers.items()} | {
        "WEBHOOK-SIGNATURE": rotated})  # fmt: skip
