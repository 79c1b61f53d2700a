"""A person's inbox (their ``Notification`` rows, read and unread) and their home: what
needs them now, counted and linked. Read-only but for marking items read."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db.models import QuerySet
from django.urls import reverse
from django.utils import timezone

from plans.models import Plan
from plans.views import STATUS_LABELS
from reviews.models import Notification
from reviews.queue import _steps_waiting, _versions_waiting
from runs.models import Run
from runs.views import RUN_STATUS_LABELS

__all__ = ["HOME_LIMIT", "INBOX_LIMIT", "home_for", "item_data", "items_for", "mark_read",
           "unread_count"]  # fmt: skip

INBOX_LIMIT = 100
HOME_LIMIT = 5  # rows listed per section of the home page (the count says how many more)
RECENT_FAILURES = timedelta(days=7)
RUNNING = ("queued", "running", "awaiting_approval")
FAILED = ("failed", "needs_replan", "budget_exhausted")


def unread_count(user: Any) -> int:
    if not getattr(user, "is_authenticated", False):
        return 0
    return Notification.objects.filter(recipient_id=user.pk, read_at__isnull=True).count()


def items_for(
    user: Any, *, unread_only: bool = False, limit: int = INBOX_LIMIT
) -> list[Notification]:
    rows = Notification.objects.filter(recipient_id=user.pk)
    if unread_only:
        rows = rows.filter(read_at__isnull=True)
    return list(rows.order_by("-created_at", "-id")[:limit])


def item_data(item: Notification) -> dict[str, Any]:
    return {
        "id": item.pk,
        "kind": item.kind,
        "title": item.title,
        "actor": item.actor,
        "comment": item.comment,
        "url": item.url,
        "plan": item.plan_id,
        "version": item.version_number,
        "run": item.run_id,
        "step": item.step_id or None,
        "created_at": item.created_at,
        "read": item.read_at is not None,
    }


def mark_read(user: Any, ids: list[int] | None = None, *, unread: bool = False) -> int:
    """Mark the user's items ``ids`` (all of them when None) read, or unread again;
    returns how many changed. Another person's items are never touched."""
    rows = Notification.objects.filter(recipient_id=user.pk)
    if ids is not None:
        rows = rows.filter(pk__in=ids)
    if unread:
        changed = rows.filter(read_at__isnull=False).update(read_at=None)
    else:
        changed = rows.filter(read_at__isnull=True).update(read_at=timezone.now())
    if changed:
        from reviews import live

        live.inbox_changed(user.pk)
    return changed


@dataclass(frozen=True)
class Section:
    """One question the home page answers: how many, the first few, and where the rest are."""

    name: str
    title: str
    count: int
    rows: list[dict[str, Any]]
    more_url: str

    def to_data(self) -> dict[str, Any]:
        return {"name": self.name, "title": self.title, "count": self.count,
                "items": self.rows, "more_url": self.more_url}  # fmt: skip


def _section(name: str, title: str, rows: QuerySet[Any], row: Any, more: str) -> Section:
    shown = list(rows[:HOME_LIMIT])
    count = len(shown) if len(shown) < HOME_LIMIT else rows.count()
    return Section(name, title, count, [row(item) for item in shown], more)


def _run_row(run: Run) -> dict[str, Any]:
    return {
        "title": f"Run #{run.pk}: {run.plan.name} v{run.version.number}",
        "status": run.status,
        "label": RUN_STATUS_LABELS.get(run.status, run.status),
        "step": run.failed_step or None,
        "at": run.finished_at or run.created_at,
        "url": reverse("runs:detail", kwargs={"run_id": run.pk}),
    }


def home_for(user: Any) -> list[Section]:
    """What needs ``user``, in the order the page shows it; only what their roles may see."""
    sections: list[Section] = []
    if user.can("plan.approve"):
        sections.append(_section(
            "reviews", "Versions waiting for your review",
            _versions_waiting(user).select_related("plan", "author").order_by("created_at", "pk"),
            lambda v: {
                "title": f"{v.plan.name} v{v.number}", "status": v.status,
                "label": STATUS_LABELS.get(v.status, v.status),
                "author": v.author.get_username(), "at": v.created_at,
                "url": reverse("plans:version", kwargs={"plan_id": v.plan_id, "number": v.number}),
            },
            reverse("review:queue"),
        ))  # fmt: skip
    if user.can("step.approve"):
        sections.append(_section(
            "steps", "Steps waiting for your approval",
            _steps_waiting(user)
            .select_related("run", "run__plan")
            .order_by("run__created_at", "position"),
            lambda s: {
                "title": f"Step {s.step_id} of run #{s.run_id} ({s.run.plan.name})",
                "status": s.status, "label": "waiting for approval", "step": s.step_id,
                "at": s.started_at or s.run.created_at,
                "url": reverse("review:queue"),
            },
            reverse("review:queue"),
        ))  # fmt: skip
    if user.can("run.view"):
        mine = Run.objects.filter(started_by_id=user.pk).select_related("plan", "version")
        sections.append(_section(
            "running", "Your runs in progress",
            mine.filter(status__in=RUNNING).order_by("-created_at", "-pk"), _run_row,
            reverse("runs:list") + "?status=running",
        ))  # fmt: skip
        since = timezone.now() - RECENT_FAILURES
        sections.append(_section(
            "failed", "Your runs that failed or need a replan (7 days)",
            mine.filter(status__in=FAILED, created_at__gte=since).order_by("-created_at", "-pk"),
            _run_row, reverse("runs:list") + "?status=failed",
        ))  # fmt: skip
    if user.can("plan.view") and user.can("plan.edit"):
        sections.append(_section(
            "plans_with_errors", "Your plans whose latest version has errors",
            Plan.objects.filter(latest_version__author_id=user.pk, latest_version__has_errors=True)
            .select_related("latest_version").order_by("-latest_version__created_at", "-pk"),
            lambda p: {
                "title": f"{p.name} v{p.latest_version.number}", "status": "has_errors",
                "label": STATUS_LABELS.get("has_errors", "has errors"),
                "at": p.latest_version.created_at,
                "url": reverse("plans:edit", kwargs={"plan_id": p.pk}),
            },
            reverse("plans:list"),
        ))  # fmt: skip
    return sections
