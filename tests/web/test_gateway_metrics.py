"""The gateway's held calls on ``/metrics/prometheus`` (issue 30, item 2): by status, a
held call past its time counted as expired, and the age of the oldest still waiting."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from gateway.models import HeldCall

from .test_prometheus import scrape

pytestmark = pytest.mark.django_db


def _held(user, status: str, *, created_ago: float, expires_in: float) -> HeldCall:
    held = HeldCall.objects.create(
        user=user,
        server="ledger",
        tool="ledger.post_entry",
        arguments={"amount": 12},
        args_hash="0" * 64,
        side_effect="write",
        status=status,
        expires_at=timezone.now() + timedelta(seconds=expires_in),
    )
    # auto_now_add: the creation time is set after the row exists
    HeldCall.objects.filter(pk=held.pk).update(
        created_at=timezone.now() - timedelta(seconds=created_ago)
    )
    return held


def test_held_calls_are_counted_by_status_and_the_oldest_waiting_one_is_aged(
    author, api_client, auditor
):
    samples = scrape(api_client(auditor))
    assert samples["forge_gateway_calls"][(("status", "held"),)] == 0
    assert samples["forge_gateway_oldest_held_call_age_seconds"][()] == 0

    _held(author, "held", created_ago=600, expires_in=3000)
    _held(author, "held", created_ago=60, expires_in=3000)
    _held(author, "held", created_ago=9000, expires_in=-10)  # past its time
    _held(author, "answered", created_ago=100, expires_in=3000)
    _held(author, "rejected", created_ago=100, expires_in=3000)

    samples = scrape(api_client(auditor))
    calls = {labels[0][1]: value for labels, value in samples["forge_gateway_calls"].items()}
    assert calls == {
        "held": 2,
        "approved": 0,
        "rejected": 1,
        "expired": 1,
        "forwarded": 0,
        "answered": 1,
    }
    assert 600 <= samples["forge_gateway_oldest_held_call_age_seconds"][()] < 700
