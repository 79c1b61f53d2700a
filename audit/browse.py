"""Pages of the trail for the audit page: newest first, by seq, fast at any depth.

Keyset pagination: a page is "the ``size`` newest matching rows before seq N" (or
"after seq N", read upwards), so page 500 of a million rows costs what page 1 costs,
where ``OFFSET`` would read and drop every row before it. Every filter the page offers
has an index ending in ``seq`` (audit.models), so a page is one index range scan.

A time filter is the exception: rows are in seq order, not time order. It is turned
into a seq range first (the smallest and largest seq of the rows in the time range,
read from the (at, seq) index alone), and the page then scans by seq inside that range,
with the time condition still applied to every row, so the answer is exact even where
clocks went backwards between rows. The time condition is written so that the database
cannot choose the ``at`` index for the page query itself: that index would hand back the
range in time order and sort it all for every page.

Actors, actions and object types match without regard to case through their stored
spellings (audit.vocabulary), so the indexes still serve them; an exclusion (logins, say)
is a condition on each row of the scan.

Counts stop at ``COUNT_CAP`` (a capped count reads at most that many index entries); an
unfiltered count is the newest seq, since seqs have no gaps.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Max, Min, QuerySet
from django.db.models.functions import Coalesce

from audit.models import AuditEvent
from audit.services import events

PAGE_SIZE = 50
COUNT_CAP = 10_000


@dataclass(frozen=True)
class Filters:
    actor: str = ""
    action: str = ""
    object_type: str = ""
    object_id: str = ""
    since: datetime | None = None
    until: datetime | None = None
    exclude_actor: tuple[str, ...] = ()
    exclude_action: tuple[str, ...] = ()

    @property
    def active(self) -> bool:
        return any(getattr(self, name) for name in self.__dataclass_fields__)

    @property
    def timed(self) -> bool:
        return self.since is not None or self.until is not None


@dataclass(frozen=True)
class Page:
    rows: list[AuditEvent]  # newest first
    newer: int | None  # the cursor for the page of newer rows (?after=), or None
    older: int | None  # the cursor for the page of older rows (?before=), or None
    count: int  # matching rows, at most COUNT_CAP
    capped: bool  # count is "more than COUNT_CAP"


def page(
    filters: Filters,
    *,
    before: int | None = None,
    after: int | None = None,
    size: int | None = None,
) -> Page:
    """The newest ``size`` rows (``PAGE_SIZE``) matching ``filters`` with seq below
    ``before`` (or, with ``after``, the oldest ``size`` above it, still newest first)."""
    size = PAGE_SIZE if size is None else size
    matching = _matching(filters)
    if matching is None:
        return Page([], None, None, 0, False)
    if after is not None:
        rows = list(matching.filter(seq__gt=after).order_by("seq")[: size + 1])
        more_newer = len(rows) > size
        rows = rows[:size][::-1]
        more_older = matching.filter(seq__lte=after).exists()
    else:
        window = matching if before is None else matching.filter(seq__lt=before)
        rows = list(window.order_by("-seq")[: size + 1])
        more_older = len(rows) > size
        rows = rows[:size]
        more_newer = before is not None and matching.filter(seq__gte=before).exists()
    count, capped = _count(filters, matching)
    return Page(
        rows,
        newer=rows[0].seq if rows and more_newer else None,
        older=rows[-1].seq if rows and more_older else None,
        count=count,
        capped=capped,
    )


def _matching(filters: Filters) -> QuerySet[AuditEvent] | None:
    """The rows matching ``filters`` (None: certainly none), ready to be ordered by seq."""
    queryset = events(
        actor=filters.actor or None,
        action=filters.action or None,
        object_type=filters.object_type or None,
        object_id=filters.object_id or None,
        exclude_actor=filters.exclude_actor,
        exclude_action=filters.exclude_action,
    )
    if not filters.timed:
        return queryset
    in_time = AuditEvent.objects.all()
    if filters.since is not None:
        in_time = in_time.filter(at__gte=filters.since)
    if filters.until is not None:
        in_time = in_time.filter(at__lt=filters.until)
    bounds = in_time.aggregate(low=Min("seq"), high=Max("seq"))
    if bounds["low"] is None:
        return None
    # Coalesce(at, at) is at, but no index serves it: the seq range decides the plan.
    queryset = queryset.alias(moment=Coalesce("at", "at")).filter(
        seq__gte=bounds["low"], seq__lte=bounds["high"]
    )
    if filters.since is not None:
        queryset = queryset.filter(moment__gte=filters.since)
    if filters.until is not None:
        queryset = queryset.filter(moment__lt=filters.until)
    return queryset


def _count(filters: Filters, matching: QuerySet[AuditEvent]) -> tuple[int, bool]:
    if not filters.active:
        return AuditEvent.objects.aggregate(head=Max("seq"))["head"] or 0, False
    count = matching.order_by()[: COUNT_CAP + 1].count()
    return min(count, COUNT_CAP), count > COUNT_CAP
