"""A person's inbox (their ``Notification`` rows, read and unread) and their home: what
needs them now, counted and linked. Read-only but for marking items read."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db.models import F, QuerySet
from django.urls import reverse
from django.utils import timezone

from forge.rules import FOUR_EYES, Judgement, RuleSet
from gateway.held import held_call_data
from gateway.models import HeldCall
from plans.models import Plan, PlanVersion, VersionStatus
from plans.rules import current_rules, shown_judgement
from plans.views import STATUS_LABELS
from reviews import resolution
from reviews.models import Notification
from reviews.queue import _steps_waiting, _versions_waiting, reachable_steps, reachable_versions
from runs.models import RUN_STATUS_LABELS, Run, StepRun

__all__ = ["HOME_LIMIT", "INBOX_LIMIT", "held_calls_of", "home_for", "item_data", "items_for",
           "mark_read", "unread_count"]  # fmt: skip

INBOX_LIMIT = 100
HOME_LIMIT = 5  # rows listed per section of the home page (the count says how many more)
RECENT_FAILURES = timedelta(days=7)
RUNNING = ("queued", "running", "awaiting_approval")
FAILED = ("failed", "needs_replan", "budget_exhausted")


def _unread(rows: QuerySet[Notification]) -> QuerySet[Notification]:
    # A resolved item (reviews.resolution) asks for nothing any more: never unread.
    return rows.filter(read_at__isnull=True, resolved_at__isnull=True)


def unread_count(user: Any) -> int:
    if not getattr(user, "is_authenticated", False):
        return 0
    return _unread(Notification.objects.filter(recipient_id=user.pk)).count()


def items_for(
    user: Any, *, unread_only: bool = False, limit: int = INBOX_LIMIT
) -> list[Notification]:
    # A held call expires by the clock, with no decision to settle its asks on: settled
    # here, where the person looks.
    resolution.settle_expired_calls(user.pk)
    rows = Notification.objects.filter(recipient_id=user.pk)
    if unread_only:
        rows = _unread(rows)
    return list(rows.order_by("-created_at", "-id")[:limit])


def held_calls_of(items: list[Notification]) -> dict[int, dict[str, Any]]:
    """The held calls ``items`` ask about, by id, as their cards show them (server, tool,
    annotations, arguments, who asked and since when): one query for the page."""
    ids = {item.held_call_id for item in items if item.held_call_id}
    if not ids:
        return {}
    return {
        held.pk: {
            **held_call_data(held),
            "arguments_text": json.dumps(
                held.arguments, indent=2, ensure_ascii=False, sort_keys=True
            ),
        }
        for held in HeldCall.objects.filter(pk__in=ids).select_related("user", "decided_by")
    }


def item_data(item: Notification, held: dict[str, Any] | None = None) -> dict[str, Any]:
    """An item as the API answers it; ``held``: its held call (``held_calls_of``)."""
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
        "resolved": item.resolved_at is not None,
        "resolved_at": item.resolved_at,
        "resolution": item.resolution,
        "held_call": held,
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


def _listed_section(name: str, title: str, items: list[Any], row: Any, more: str) -> Section:
    """A section of items already chosen in Python (judged one by one under the approval
    rules), the first few shown."""
    return Section(name, title, len(items), [row(item) for item in items[:HOME_LIMIT]], more)


def _run_row(run: Run) -> dict[str, Any]:
    return {
        "title": f"Run #{run.pk}: {run.plan.name} v{run.version.number}",
        "status": run.status,
        "label": RUN_STATUS_LABELS.get(run.status, run.status),
        "step": run.failed_step or None,
        "at": run.finished_at or run.created_at,
        "url": reverse("runs:detail", kwargs={"run_id": run.pk}),
    }


def _lacking(version: PlanVersion, rules: RuleSet) -> tuple[str, ...]:
    return _open_words(shown_judgement(version, rules))


def _open_words(judgement: Judgement | None) -> tuple[str, ...]:
    """What the open rules still need, each as its row on a card says it."""
    if judgement is None:
        return ()
    return tuple(
        (rule.lacking() or "").removeprefix(f"rule {rule.id} ") for rule in judgement.open_rules()
    )


def home_for(user: Any) -> list[Section]:
    """What needs ``user``, in the order the page shows it; only what their roles may see."""
    sections: list[Section] = []
    rules = current_rules()  # read once for the page
    if user.can("plan.approve"):
        versions = (
            _versions_waiting(user).select_related("plan", "author").order_by("created_at", "pk")
        )
        version_row = lambda v: {  # noqa: E731
            "title": f"{v.plan.name} v{v.number}", "status": v.status,
            "label": STATUS_LABELS.get(v.status, v.status),
            "author": v.author.get_username(), "at": v.created_at,
            "url": reverse("plans:version", kwargs={"plan_id": v.plan_id, "number": v.number}),
        }  # fmt: skip
        title, more = "Versions waiting for your review", reverse("review:queue")
        if rules == FOUR_EYES:
            sections.append(_section("reviews", title, versions, version_row, more))
        else:  # only those whose open rules this person can satisfy, as the queue offers
            reachable = reachable_versions(
                user, versions.prefetch_related("approvals__reviewer"), rules
            )
            sections.append(_listed_section(
                "reviews", title, reachable,
                # what it still needs ("needs 1 of finance"), as its card says
                lambda v: {**version_row(v), "label": "; ".join(_lacking(v, rules))
                           or version_row(v)["label"]},
                more,
            ))  # fmt: skip
    if user.can("step.approve"):
        steps = (
            _steps_waiting(user)
            .select_related("run", "run__plan")
            .order_by("run__created_at", "position")
        )
        step_row = lambda s: {  # noqa: E731
            "title": f"Step {s.step_id} of run #{s.run_id} ({s.run.plan.name})",
            "status": s.status, "label": "waiting for approval", "step": s.step_id,
            "at": s.started_at or s.run.created_at,
            "url": reverse("review:queue"),
        }  # fmt: skip
        title, more = "Steps waiting for your approval", reverse("review:queue")
        if rules == FOUR_EYES:
            sections.append(_section("steps", title, steps, step_row, more))
        else:  # only those whose matching rules this person can satisfy
            reachable_rows, judgements = reachable_steps(
                user, steps.select_related("run__version__author"), rules
            )
            sections.append(_listed_section(
                "steps", title, reachable_rows,
                lambda s: {**step_row(s), "label": "; ".join(_open_words(judgements.get(s.pk)))
                           or step_row(s)["label"]},
                more,
            ))  # fmt: skip
    if user.can("run.reconcile"):
        sections.append(_section(
            "reconcile", "Steps to reconcile",
            StepRun.objects.filter(
                status="needs_reconciliation", plan_version=F("run__version__number")
            ).select_related("run", "run__plan").order_by("run__created_at", "position"),
            lambda s: {
                "title": f"Step {s.step_id} of run #{s.run_id} ({s.run.plan.name})",
                "status": s.status, "label": "needs reconciling by an operator",
                "step": s.step_id, "at": s.finished_at or s.run.created_at,
                "url": reverse("runs:detail", kwargs={"run_id": s.run_id})
                + f"#step-{s.step_id}",
            },
            reverse("runs:list"),
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
    if user.can("plan.edit") and rules != FOUR_EYES:
        # Under approval rules an author's version may wait on a team: the home says on
        # which ("needs 1 of finance"), as the card does.
        sections.append(_section(
            "waiting_on_rules", "Your versions waiting for approval",
            PlanVersion.objects.filter(
                author_id=user.pk, status=VersionStatus.AWAITING_APPROVAL, submitted=True,
                has_errors=False,
            ).select_related("plan", "author").prefetch_related("approvals__reviewer")
            .order_by("created_at", "pk"),
            lambda v: {
                "title": f"{v.plan.name} v{v.number}", "status": v.status,
                "label": "; ".join(_lacking(v, rules)) or STATUS_LABELS.get(v.status, v.status),
                "at": v.created_at,
                "url": reverse("plans:version", kwargs={"plan_id": v.plan_id, "number": v.number}),
            },
            reverse("plans:list"),
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
