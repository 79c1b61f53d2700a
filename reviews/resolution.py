"""Inbox items that resolve themselves: an item that asks a person to act
(``reviews.signals.ASKS``) is resolved once what it asks for no longer waits, with why in
words, and leaves the unread count (``reviews.inbox``, the live count over /ws/inbox/).

An ask waits while its subject does:

- ``version_submitted``: while its version awaits approval. Resolved "approved by
  grace" (or rejected, or changes requested, by whoever decided) or "superseded by v3";
  under approval rules also once the person asked can no longer bring it closer (their
  approval counts already, or what is open needs another team): "waits for others: rule
  payments needs 1 of finance". A ``step_waiting`` step's ask likewise.
- ``changes_requested``: while its version stays sent back and no newer version of the
  plan was submitted. Resolved "answered by v3", or by a later decision on the version.
- ``step_waiting``: a step, while its run is live on the same version and the step
  awaits approval ("approved by grace", "rejected by grace"); a milestone, while its run is
  live on the same version and nobody reviewed it ("reviewed by grace"). Either is
  resolved when its run resumed on another version ("run #7 resumed on v3"), needs a
  replan or is over ("run #7 cancelled").
- ``step_needs_reconciliation``: while its step, on its run's same version, still needs
  reconciling ("reconciled by olga"), or until the run is over.
- ``run_needs_replan``: while its run needs a replan on the same version. Resolved
  "resumed on v3", or when the run is over.
- ``call_held``: while the gateway's held call waits (``held``, within its time) and the
  person asked can still bring it closer under the approval rules. Resolved "approved
  by grace", "rejected by grace", "expired", or "waits for others: ...".

The check reads the state as it is, so it is settled where that state changes: after
commit, on every plans signal about a version (the plan's open asks), on
``gateway.signals.call_decided`` (the held call's), when an inbox is read (its held
calls that ran out of time: nothing else marks them) and on
``runs.signals.waits_ended`` (the run's; also sent when a step approval was counted
without being enough), and right after an ask is told, since a
decision may commit between a submission and the telling of it. Each settle is a few
queries whatever the number of items, and the inbox's reads stay one query: they read
the resolution stored on the item.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from django.db.models import Max
from django.utils import timezone

from accounts.teams import teams_of
from forge.rules import FOUR_EYES, Judgement
from forge.runtime.events import EventType
from gateway import signals as gateway_signals
from gateway.held import held_judgement
from gateway.models import HeldCall
from plans.models import Approval, PlanVersion, VersionStatus
from plans.rules import current_rules, version_judgement
from reviews import live
from reviews.models import Notification
from reviews.signals import ASKS
from runs.models import RUN_STATUS_LABELS, Run, RunEvent, StepApproval, StepRun
from runs.step_rules import step_judgements

__all__ = [
    "connect", "is_milestone", "settle", "settle_call", "settle_expired_calls", "settle_plan",
    "settle_run",
]  # fmt: skip

logger = logging.getLogger(__name__)

# Runs whose waiting steps a person can still approve (``reviews.queue`` offers those).
LIVE_RUN_STATUSES = frozenset({"queued", "running", "awaiting_approval"})
_DECIDED = {
    VersionStatus.APPROVED: "approved",
    VersionStatus.REJECTED: "rejected",
    VersionStatus.CHANGES_REQUESTED: "changes requested",
}


def is_milestone(reason: str) -> bool:
    """Whether a ``step_waiting`` item is a milestone's: ``runs`` words its wait
    "milestone 'x' waits for a person's review" (the item's comment)."""
    return reason.startswith("milestone ")


def open_asks() -> Any:
    return Notification.objects.filter(resolved_at__isnull=True, kind__in=ASKS)


def settle_plan(plan_id: int) -> set[int]:
    """Resolve the plan's open asks that no longer wait; the ids resolved."""
    return settle(open_asks().filter(plan_id=plan_id))


def settle_run(run_id: int) -> set[int]:
    """Resolve the run's open asks that no longer wait; the ids resolved."""
    return settle(open_asks().filter(run_id=run_id))


def settle_call(held_call_id: int) -> set[int]:
    """Resolve the held call's open asks that no longer wait; the ids resolved."""
    return settle(open_asks().filter(held_call_id=held_call_id))


def settle_expired_calls(recipient_id: int) -> set[int]:
    """Resolve the person's asks about held calls whose time ran out: a held call expires
    by the clock, with no decision to settle on."""
    expired = HeldCall.objects.filter(status="held", expires_at__lte=timezone.now())
    return settle(
        open_asks().filter(
            recipient_id=recipient_id, kind="call_held",
            held_call_id__in=expired.values("pk"),
        )
    )  # fmt: skip


def settle(items: Iterable[Notification]) -> set[int]:
    """Resolve those of ``items`` (open asks) that no longer wait, and wake their
    recipients' open pages; the ids resolved."""
    asks = [item for item in items if item.kind in ASKS and item.resolved_at is None]
    if not asks:
        return set()
    reasons = {**_version_reasons(asks), **_run_reasons(asks), **_call_reasons(asks)}
    grouped: dict[str, list[int]] = defaultdict(list)
    for item in asks:
        if reasons.get(item.pk):
            grouped[reasons[item.pk]].append(item.pk)
    now, resolved = timezone.now(), set()
    for why, ids in grouped.items():
        rows = Notification.objects.filter(pk__in=ids, resolved_at__isnull=True)
        resolved.update(rows.values_list("pk", flat=True))
        rows.update(resolved_at=now, resolution=why[:200])
    for recipient in {item.recipient_id for item in asks if item.pk in resolved}:
        live.inbox_changed(recipient)
    return resolved


# --- Why a version's ask no longer waits -----------------------------------------------------


def _version_reasons(asks: list[Notification]) -> dict[int, str]:
    mine = [
        item
        for item in asks
        if item.kind in ("version_submitted", "changes_requested") and item.version_id
    ]
    if not mine:
        return {}
    ids = {item.version_id for item in mine}
    versions = {
        version.pk: version
        for version in PlanVersion.objects.filter(pk__in=ids)
        .select_related("superseded_by")
        .only("plan_id", "number", "status", "superseded_by__number")
    }
    deciders: dict[int, str] = {}
    for version_id, reviewer, by_policy in (
        Approval.objects.filter(version_id__in=ids)
        .order_by("created_at", "id")
        .values_list("version_id", "reviewer__username", "by_policy")
    ):
        deciders[version_id] = "policy" if by_policy or not reviewer else reviewer  # latest
    newest = dict(
        PlanVersion.objects.filter(
            plan_id__in={version.plan_id for version in versions.values()},
            submitted=True,
            has_errors=False,
        )
        .values("plan_id")
        .annotate(newest=Max("number"))
        .values_list("plan_id", "newest")
    )
    reasons: dict[int, str] = {}
    for item in mine:
        version = versions.get(int(item.version_id or 0))
        if version is None:
            reasons[item.pk] = "the version no longer exists"
            continue
        decided = _DECIDED.get(version.status)
        said = f"{decided} by {deciders.get(version.pk, 'someone')}" if decided else ""
        if item.kind == "version_submitted":
            newer = version.superseded_by
            if version.status == VersionStatus.SUPERSEDED and newer is not None:
                reasons[item.pk] = f"superseded by v{newer.number}"
            elif said:
                reasons[item.pk] = said
        elif newest.get(version.plan_id, 0) > version.number:
            reasons[item.pk] = f"answered by v{newest[version.plan_id]}"
        elif version.status != VersionStatus.CHANGES_REQUESTED and said:
            reasons[item.pk] = said
    still = [
        item
        for item in mine
        if item.kind == "version_submitted"
        and item.pk not in reasons
        and versions[int(item.version_id or 0)].status == VersionStatus.AWAITING_APPROVAL
    ]
    reasons.update(_version_rules_reasons(still))
    return reasons


def _version_rules_reasons(items: list[Notification]) -> dict[int, str]:
    """Asks to review a version that still waits, but under approval rules no longer for
    the person asked: they count already, or only others can satisfy what is open."""
    rules = current_rules()
    if not items or rules == FOUR_EYES:
        return {}
    versions = {
        version.pk: version
        for version in PlanVersion.objects.filter(pk__in={item.version_id for item in items})
        .select_related("author")
        .prefetch_related("approvals__reviewer")
    }
    judgements = {pk: version_judgement(version, rules) for pk, version in versions.items()}
    return _not_for_them(items, lambda item: judgements.get(int(item.version_id or 0)))


# --- Why a run's ask no longer waits ---------------------------------------------------------


def _run_reasons(asks: list[Notification]) -> dict[int, str]:
    kinds = ("step_waiting", "step_needs_reconciliation", "run_needs_replan")
    mine = [item for item in asks if item.kind in kinds and item.run_id]
    if not mine:
        return {}
    runs = {
        run.pk: run
        for run in Run.objects.filter(pk__in={item.run_id for item in mine})
        .select_related("version")
        .only("status", "version__number")
    }
    reasons: dict[int, str] = {}
    still: list[Notification] = []  # steps and milestones whose run is live on their version
    for item in mine:
        run = runs.get(int(item.run_id or 0))
        if run is None:
            reasons[item.pk] = "the run no longer exists"
            continue
        over = run.status not in LIVE_RUN_STATUSES and run.status != "needs_replan"
        moved = run.version.number != item.version_number
        if over:
            reasons[item.pk] = f"run #{run.pk} {_run_words(run.status)}"
        elif item.kind == "run_needs_replan":
            if moved or run.status != "needs_replan":
                reasons[item.pk] = f"resumed on v{run.version.number}"
        elif moved:
            reasons[item.pk] = f"run #{run.pk} resumed on v{run.version.number}"
        elif run.status == "needs_replan":
            reasons[item.pk] = f"run #{run.pk} {_run_words(run.status)}"
        else:
            still.append(item)
    reconciling = [item for item in still if item.kind == "step_needs_reconciliation"]
    waiting = [item for item in still if item.kind == "step_waiting"]
    steps = [item for item in waiting if not is_milestone(item.comment)]
    milestones = [item for item in waiting if is_milestone(item.comment)]
    reasons.update(_step_reasons(steps))
    reasons.update(_milestone_reasons(milestones))
    reasons.update(_reconciled_reasons(reconciling))
    return reasons


def _run_words(status: str) -> str:
    return RUN_STATUS_LABELS.get(status, status).lower()


def _step_reasons(items: list[Notification]) -> dict[int, str]:
    if not items:
        return {}
    run_ids, step_ids = {item.run_id for item in items}, {item.step_id for item in items}
    statuses: dict[tuple[Any, Any, str], str] = {
        (run_id, number, step_id): status
        for run_id, number, step_id, status in StepRun.objects.filter(
            run_id__in=run_ids, step_id__in=step_ids
        ).values_list("run_id", "plan_version", "step_id", "status")
    }
    decided: dict[tuple[Any, Any, str], str] = {}
    for run_id, number, step_id, decision, reviewer in (
        StepApproval.objects.filter(run_id__in=run_ids, step_id__in=step_ids)
        .order_by("created_at", "id")
        .values_list("run_id", "plan_version", "step_id", "decision", "reviewer__username")
    ):
        decided[(run_id, number, step_id)] = f"{decision} by {reviewer}"  # the latest
    reasons: dict[int, str] = {}
    still: list[Notification] = []
    for item in items:
        key = (item.run_id, item.version_number, item.step_id)
        if statuses.get(key) == "awaiting_approval":
            still.append(item)
            continue
        reasons[item.pk] = decided.get(key, "no longer waits")
    reasons.update(_step_rules_reasons(still))
    return reasons


def _step_rules_reasons(items: list[Notification]) -> dict[int, str]:
    """Asks to approve a step that still waits, but under approval rules no longer for
    the person asked (``runs.step_rules``, as the gate judges the step)."""
    if not items or current_rules() == FOUR_EYES:
        return {}
    waiting = StepRun.objects.filter(
        run_id__in={item.run_id for item in items},
        step_id__in={item.step_id for item in items},
        status="awaiting_approval",
    ).select_related("run__version__author")
    steps = {(step.run_id, step.plan_version, step.step_id): step for step in waiting}
    judgements = step_judgements(list(steps.values()))

    def judgement_of(item: Notification) -> Judgement | None:
        step = steps.get((item.run_id, item.version_number, item.step_id))
        return None if step is None else judgements.get(step.pk)

    return _not_for_them(items, judgement_of)


def _not_for_them(
    items: list[Notification], judgement_of: Callable[[Notification], Judgement | None]
) -> dict[int, str]:
    """``"waits for others: rule reads needs 1 of finance"`` for each item whose recipient
    cannot satisfy any open rule of its subject (``Judgement.can_help``)."""
    reasons: dict[int, str] = {}
    for item in items:
        judgement = judgement_of(item)
        if judgement is None or judgement.stopped is not None:
            continue
        person = item.recipient
        if not judgement.can_help(person.get_username(), teams_of(person)):
            reasons[item.pk] = "waits for others: " + "; ".join(judgement.lacking())
    return reasons


def _reconciled_reasons(items: list[Notification]) -> dict[int, str]:
    return _done_by(items, EventType.STEP_RECONCILED, "reconciled", lambda event: event[2])


def _milestone_reasons(items: list[Notification]) -> dict[int, str]:
    def milestone(event: tuple[Any, ...]) -> str:
        facts = event[3]
        return str(facts.get("milestone", "")) if isinstance(facts, dict) else ""

    return _done_by(items, EventType.MILESTONE_REVIEWED, "reviewed", milestone)


def _done_by(
    items: list[Notification],
    event_type: str,
    verb: str,
    subject: Callable[[tuple[Any, ...]], str],
) -> dict[int, str]:
    """Why each of ``items`` (about a step or milestone of a run's version) no longer
    waits: ``"<verb> by <actor>"`` once an ``event_type`` event about its ``subject``
    (what the item's ``step_id`` names) was written for that version."""
    if not items:
        return {}
    done: dict[tuple[Any, Any, str], str] = {}
    for event in RunEvent.objects.filter(
        run_id__in={item.run_id for item in items}, event_type=event_type
    ).values_list("run_id", "plan_version", "step_id", "facts", "actor"):
        done[(event[0], event[1], subject(event))] = f"{verb} by {event[4]}"
    reasons: dict[int, str] = {}
    for item in items:
        why = done.get((item.run_id, item.version_number, item.step_id))
        if why:
            reasons[item.pk] = why
    return reasons


# --- Why a held call's ask no longer waits ----------------------------------------------------

_CALL_WORDS = {"approved": "approved", "forwarded": "approved", "answered": "approved",
               "rejected": "rejected"}  # fmt: skip


def _call_reasons(asks: list[Notification]) -> dict[int, str]:
    mine = [item for item in asks if item.kind == "call_held" and item.held_call_id]
    if not mine:
        return {}
    calls = {
        held.pk: held
        for held in HeldCall.objects.filter(
            pk__in={item.held_call_id for item in mine}
        ).select_related("user", "decided_by")
    }
    now, reasons = timezone.now(), {}
    for item in mine:
        held = calls.get(int(item.held_call_id or 0))
        if held is None:
            reasons[item.pk] = "the held call no longer exists"
        elif held.status in _CALL_WORDS:
            by = "someone" if held.decided_by is None else held.decided_by.get_username()
            reasons[item.pk] = f"{_CALL_WORDS[held.status]} by {by}"
        elif held.status_at(now) == "expired":
            reasons[item.pk] = "expired without a decision"
        else:
            judgement = held_judgement(held)
            person = item.recipient
            if not judgement.can_help(
                person.get_username(), teams_of(person), held.user.get_username()
            ):
                reasons[item.pk] = "waits for others: " + "; ".join(judgement.lacking())
    return reasons


# --- Where the state changes -------------------------------------------------------------------


def _quietly(settling: Any, *args: Any) -> None:
    try:
        settling(*args)
    except Exception:  # resolving an item must never undo or fail what was decided
        logger.exception("could not resolve inbox items (%s%s)", settling.__name__, args)


def _on_version(sender: object, *, version_id: int, **_: Any) -> None:
    plan_id = PlanVersion.objects.filter(pk=version_id).values_list("plan_id", flat=True).first()
    if plan_id is not None:
        _quietly(settle_plan, plan_id)


def _on_run(sender: object, *, run_id: int, **_: Any) -> None:
    _quietly(settle_run, run_id)


def _on_call(sender: object, *, held_call_id: int, **_: Any) -> None:
    _quietly(settle_call, held_call_id)


def connect() -> None:
    """Called once from ``ReviewsConfig.ready``."""
    from plans import signals as plan_signals
    from runs import signals as run_signals

    gateway_signals.call_decided.connect(_on_call, dispatch_uid="reviews.resolution.calls")
    for name in ("version_approved", "version_approval_counted", "version_rejected",
                 "version_changes_requested", "version_submitted",
                 "version_superseded"):  # fmt: skip
        getattr(plan_signals, name).connect(_on_version, dispatch_uid=f"reviews.resolved.{name}")
    run_signals.waits_ended.connect(_on_run, dispatch_uid="reviews.resolution.runs")
