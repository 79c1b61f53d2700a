"""One full walk of the audit chain at a time, and not too often (issue "Trust", 13).

A full walk reads every row: seconds for a million. ``claim`` lets one start only when no
other is running (in any process) and the last one finished at least
``FORGE_AUDIT_VERIFY_INTERVAL`` seconds ago; ``release`` marks it finished. Both are a
compare-and-swap on the ``WalkLock`` row's ``turn`` (it must change exactly one row), so
two claims racing cannot both win, on SQLite and PostgreSQL alike, and no lock is held
while the walk runs. ``manage.py forge_audit_verify`` does not take the lock: it
is an operator's own command.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from audit.models import WalkLock
from forge.errors import ForgeError

# A walk that has not released the lock after this long is taken to have died with its
# process (a million rows take about 30 s here), and the lock opens again.
WALK_LEASE = timedelta(minutes=10)
# What a refused caller is told to wait while a walk runs: the walk's length is unknown,
# and once it is over the caller hears the interval it must still wait (429).
RUNNING_RETRY_AFTER = 5


class WalkRefused(ForgeError, RuntimeError):
    """A full walk that may not start now: ``verify_running`` (409) while another walk
    runs, ``verify_throttled`` (429) within the interval after the last one.
    ``retry_after`` is in seconds."""

    code = "verify_throttled"

    def __init__(self, message: str, *, code: str, retry_after: int) -> None:
        super().__init__(message, code=code)
        self.retry_after = retry_after


@dataclass(frozen=True)
class Ticket:
    """A claimed walk; hand it back to ``release``."""

    turn: int


def claim(holder: str, *, now: datetime | None = None) -> Ticket:
    """Take the lock for one walk, or raise ``WalkRefused``."""
    now = now or timezone.now()
    lock = _lock()
    if lock.expires_at is not None and lock.expires_at > now:
        raise WalkRefused(
            f"a full walk of the chain is already running (started by {lock.holder})",
            code="verify_running",
            retry_after=RUNNING_RETRY_AFTER,
        )
    interval = timedelta(seconds=settings.FORGE_AUDIT_VERIFY_INTERVAL)
    if lock.finished_at is not None and now - lock.finished_at < interval:
        wait = interval - (now - lock.finished_at)
        raise WalkRefused(
            f"the whole chain was walked {int((now - lock.finished_at).total_seconds())} s ago; "
            f"walks are at least {settings.FORGE_AUDIT_VERIFY_INTERVAL} s apart",
            code="verify_throttled",
            retry_after=max(int(wait.total_seconds() + 0.999), 1),
        )
    taken = WalkLock.objects.filter(pk=1, turn=lock.turn).update(
        turn=lock.turn + 1, holder=holder[:200], started_at=now, expires_at=now + WALK_LEASE
    )
    if taken != 1:  # another claim changed the row since it was read: that walk runs
        raise WalkRefused(
            "a full walk of the chain has just started",
            code="verify_running",
            retry_after=RUNNING_RETRY_AFTER,
        )
    return Ticket(lock.turn + 1)


def release(ticket: Ticket, *, now: datetime | None = None) -> None:
    """Mark the walk of ``ticket`` finished (a walk whose lease ran out changes nothing)."""
    WalkLock.objects.filter(pk=1, turn=ticket.turn).update(
        turn=ticket.turn + 1, finished_at=now or timezone.now(), expires_at=None
    )


def _lock() -> WalkLock:
    lock = WalkLock.objects.filter(pk=1).first()
    if lock is not None:
        return lock
    try:
        with transaction.atomic():
            return WalkLock.objects.create(pk=1)
    except IntegrityError:  # created by a concurrent first claim
        return WalkLock.objects.get(pk=1)
