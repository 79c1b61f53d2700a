"""The gateway's figures on ``/metrics/prometheus``: held calls by status, and how long the
oldest still waiting has waited. A collector of its own, registered into the runs app's
registry when this app is ready (the gateway sits above runs, which cannot import it);
like the rest, read from the database at scrape time, so any web process answers for all."""

from __future__ import annotations

from collections.abc import Iterator

from django.db.models import Count, Min
from django.utils import timezone
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from gateway.models import HELD_STATUSES, HeldCall

__all__ = ["HeldCallsCollector"]


class HeldCallsCollector(Collector):
    def describe(self) -> list[Metric]:
        return []  # describing would query the database at registration

    def collect(self) -> Iterator[Metric]:
        by_status = GaugeMetricFamily(
            "forge_gateway_calls",
            "Unbound gateway calls that were held for a person, by status "
            "(held: waiting for a decision now).",
            labels=["status"],
        )
        now = timezone.now()
        counts = dict(HeldCall.objects.values_list("status").annotate(n=Count("id")).order_by())
        # A held call past its time is expired, though its row says so only once the agent
        # asks again (gateway.held).
        lapsed = HeldCall.objects.filter(status="held", expires_at__lte=now).count()
        counts["held"] = counts.get("held", 0) - lapsed
        counts["expired"] = counts.get("expired", 0) + lapsed
        for status in HELD_STATUSES:
            by_status.add_metric([status], counts.get(status, 0))
        yield by_status
        oldest = HeldCall.objects.filter(status="held", expires_at__gt=now).aggregate(
            at=Min("created_at")
        )["at"]
        age = GaugeMetricFamily(
            "forge_gateway_oldest_held_call_age_seconds",
            "How long the oldest gateway call still held for a person has waited (0: none).",
        )
        age.add_metric([], 0.0 if oldest is None else (now - oldest).total_seconds())
        yield age
