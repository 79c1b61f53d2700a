"""Who is told what: the receivers of ``review_event`` and of the signals the floors below
send (``plans.signals``, ``runs.signals``), turned into inbox items, e-mails and webhook
deliveries.

Every kind of ``review_event`` (``reviews.signals.KINDS``) has one rule here (``RULES``):
its recipients and its title. Nobody is told about what they did themselves; a person
whose preferences leave a kind out is not told about it; an inactive account is never
told. The same news about the same version, run and step is told to a person once, so a
sender that repeats an event (two parts both saying a version waits) makes one item.

Inbox items are written in the sender's transaction-free moment after its commit; the
e-mails and the webhook deliveries are tasks (``reviews.tasks``) for the workers, so a
slow mail server or webhook never holds a request.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Q
from django.urls import reverse

from accounts.teams import teams_of
from forge.rules import FOUR_EYES, Judgement
from gateway import signals as gateway_signals
from gateway.held import held_judgement
from gateway.models import HeldCall
from plans.models import PlanVersion
from plans.rules import current_rules, version_judgement
from reviews import resolution
from reviews.models import Notification, NotificationPreference, Webhook, WebhookDelivery
from reviews.resolution import is_milestone
from reviews.signals import ASKS, KINDS, Event, Subject, review_event
from runs.models import StepRun
from runs.step_rules import step_judgement

__all__ = ["Event", "RULES", "connect", "kinds_for", "tell"]

logger = logging.getLogger(__name__)

# A comment on an item is cut here (the page has all of it).
COMMENT_LIMIT = 4_000


def _users_who_can(permission: str) -> list[Any]:
    return [
        user for user in get_user_model().objects.filter(is_active=True) if user.can(permission)
    ]


def _author(subject: Subject, event: Event) -> list[int]:
    return [subject.version_author_id] if subject.version_author_id else []


def _starter(subject: Subject, event: Event) -> list[int]:
    return [subject.run_starter_id] if subject.run_starter_id else []


def _version_judgement(subject: Subject) -> Judgement | None:
    """Under approval rules, the waiting version's judgement; ``None`` without rules."""
    if current_rules() == FOUR_EYES or subject.version_id is None:
        return None
    version = PlanVersion.objects.select_related("author").filter(pk=subject.version_id).first()
    return None if version is None else version_judgement(version)


def _step_judgement(subject: Subject, event: Event) -> Judgement | None:
    """Under approval rules, the waiting step's judgement (``runs.step_rules``); ``None``
    without rules, or for a milestone (no waiting step of that id)."""
    if current_rules() == FOUR_EYES or subject.run_id is None:
        return None
    step = (
        StepRun.objects.filter(
            run_id=subject.run_id, step_id=event.step_id, status="awaiting_approval",
            plan_version=subject.version_number,
        ).select_related("run__version__author").first()
    )  # fmt: skip
    return None if step is None else step_judgement(step)


def _who_can_help(people: list[Any], judgement: Judgement | None) -> list[int]:
    # Under approval rules only those who can satisfy a rule still open ("needs 1 of
    # finance"): the others could approve, but it would count toward nothing.
    if judgement is None:
        return [u.pk for u in people]
    return [u.pk for u in people if judgement.can_help(u.get_username(), teams_of(u))]


def _asks_for(judgement: Judgement | None) -> str:
    """``": rule payments needs 1 of finance"`` under approval rules, else nothing."""
    return (
        ""
        if judgement is None or not judgement.lacking()
        else ": " + "; ".join(judgement.lacking())
    )


def _version_approvers(subject: Subject, event: Event) -> list[int]:
    # Never its author: the four-eyes rule keeps them from deciding (plans.services).
    people = [u for u in _users_who_can("plan.approve") if u.pk != subject.version_author_id]
    return _who_can_help(people, _version_judgement(subject))


def _operators(subject: Subject, event: Event) -> list[int]:
    # Whoever may reconcile a step (runs.services.reconcile_step).
    return [u.pk for u in _users_who_can("run.reconcile")]


def _step_approvers(subject: Subject, event: Event) -> list[int]:
    # Never the author of the version the run runs (runs.services.approve_step).
    people = [u for u in _users_who_can("step.approve") if u.pk != subject.version_author_id]
    return _who_can_help(people, _step_judgement(subject, event))


def _held_call(event: Event) -> HeldCall | None:
    if event.held_call_id is None:
        return None
    return HeldCall.objects.select_related("user").filter(pk=event.held_call_id).first()


def _call_approvers(subject: Subject, event: Event) -> list[int]:
    """Whoever could bring a held call closer to approval, as the review queue offers it
    (``gateway.held.waiting_calls``): ``step.approve``, not its caller, and able to satisfy
    a rule still open (``Judgement.can_help``; the caller never counts)."""
    held = _held_call(event)
    if held is None or held.status != "held":
        return []
    judgement, caller = held_judgement(held), held.user.get_username()
    return [
        u.pk
        for u in _users_who_can("step.approve")
        if u.pk != held.user_id and judgement.can_help(u.get_username(), teams_of(u), caller)
    ]


def _call_title(subject: Subject, event: Event) -> str:
    held = _held_call(event)
    if held is None:
        return "An agent's call waits for you"
    # Under approval rules, what it still needs ("needs 1 of finance"), as a step's ask says.
    asks = "" if current_rules() == FOUR_EYES else "; ".join(held_judgement(held).lacking())
    return (
        f"Call of {held.tool} ({held.side_effect}) by {held.user.get_username()} waits for you"
        + (f": {asks}" if asks else "")
    )


def _call_card(subject: Subject, event: Event) -> str:
    return f"{reverse('review:queue')}#call-{event.held_call_id}"


def _version_page(subject: Subject, event: Event) -> str:
    if subject.plan_id is None or subject.version_number is None:
        return reverse("review:inbox")
    url = reverse(
        "plans:version", kwargs={"plan_id": subject.plan_id, "number": subject.version_number}
    )
    return f"{url}#step-{event.step_id}" if event.step_id else url


def _run_page(subject: Subject, event: Event) -> str:
    if subject.run_id is None:
        return reverse("review:inbox")
    url = reverse("runs:detail", kwargs={"run_id": subject.run_id})
    return f"{url}#step-{event.step_id}" if event.step_id else url


def _queue_page(subject: Subject, event: Event) -> str:
    return reverse("review:queue")


def _version_name(subject: Subject) -> str:
    return f"{subject.plan_name} v{subject.version_number}"


@dataclass(frozen=True)
class Rule:
    recipients: Callable[[Subject, Event], list[int]]
    title: Callable[[Subject, Event], str]
    url: Callable[[Subject, Event], str]


def _waiting_what(event: Event) -> str:
    return "Milestone" if is_milestone(event.comment) else "Step"


def _on_step(event: Event) -> str:
    return f" on step {event.step_id}" if event.step_id else ""


RULES: dict[str, Rule] = {
    "version_submitted": Rule(
        _version_approvers,
        lambda s, e: (
            f"{_version_name(s)} by {e.actor} waits for your review"
            + _asks_for(_version_judgement(s))
        ),
        _queue_page,
    ),
    "version_approved": Rule(
        _author, lambda s, e: f"{_version_name(s)} was approved by {e.actor}", _version_page
    ),
    "version_rejected": Rule(
        _author, lambda s, e: f"{_version_name(s)} was rejected by {e.actor}", _version_page
    ),
    "changes_requested": Rule(
        _author,
        lambda s, e: f"{e.actor} requested changes to {_version_name(s)}{_on_step(e)}",
        _version_page,
    ),
    "comment_added": Rule(
        _author,
        lambda s, e: f"{e.actor} commented on {_version_name(s)}{_on_step(e)}",
        _version_page,
    ),
    "thread_resolved": Rule(
        _author,
        lambda s, e: f"{e.actor} resolved a thread on {_version_name(s)}{_on_step(e)}",
        _version_page,
    ),
    "step_waiting": Rule(
        _step_approvers,
        lambda s, e: (
            f"{_waiting_what(e)} {e.step_id} of run #{s.run_id} ({s.plan_name}) waits for you"
            + _asks_for(_step_judgement(s, e))
        ),
        _queue_page,
    ),
    "step_needs_reconciliation": Rule(
        _operators,
        lambda s, e: (
            f"Step {e.step_id} of run #{s.run_id} ({s.plan_name}) needs reconciling by an operator"
        ),
        _run_page,
    ),
    "run_failed": Rule(
        _starter,
        lambda s, e: f"Run #{s.run_id} of {_version_name(s)} failed{_on_step(e)}",
        _run_page,
    ),
    "run_needs_replan": Rule(
        _starter,
        lambda s, e: f"Run #{s.run_id} of {_version_name(s)} needs a replan{_on_step(e)}",
        _run_page,
    ),
    "call_held": Rule(_call_approvers, _call_title, _call_card),
}
assert set(RULES) == set(KINDS), "every kind of review_event needs a rule"


def kinds_for(user: Any) -> list[str]:
    """The kinds ``user`` is told about: their preference, else every kind."""
    row = NotificationPreference.objects.filter(user=user).first()
    return list(KINDS) if row is None else [kind for kind in KINDS if kind in row.kinds]


def tell(event: Event) -> list[Notification]:
    """Write ``event``'s inbox items and queue its e-mails and webhook deliveries."""
    rule = RULES.get(event.kind)
    if rule is None:
        logger.warning("review_event of unknown kind %r ignored", event.kind)
        return []
    subject = _subject(event)
    if subject is None:
        logger.warning("review_event %s names nothing that exists", event)
        return []
    title, url = rule.title(subject, event), rule.url(subject, event)
    wanted = set(rule.recipients(subject, event))
    people = list(
        get_user_model().objects.filter(pk__in=wanted, is_active=True).exclude(username=event.actor)
    )
    preferences = {
        row.user_id: row for row in NotificationPreference.objects.filter(user__in=people)
    }
    told = _already_told(event, subject, [p.pk for p in people])
    created: list[Notification] = []
    mailed: list[int] = []
    with transaction.atomic():
        for person in people:
            preference = preferences.get(person.pk)
            if preference is not None and event.kind not in preference.kinds:
                continue
            if person.pk in told:
                continue
            item = Notification.objects.create(
                recipient=person, kind=event.kind, actor=event.actor, plan_id=subject.plan_id,
                version_id=subject.version_id, version_number=subject.version_number,
                run_id=subject.run_id, step_id=event.step_id,
                held_call_id=event.held_call_id, title=title[:300],
                comment=event.comment[:COMMENT_LIMIT], url=url,
            )  # fmt: skip
            created.append(item)
            if person.email and (preference is None or preference.email):
                mailed.append(item.pk)
        deliveries = [
            WebhookDelivery.objects.create(
                webhook=hook,
                kind=event.kind,
                news=news_key(event, subject),
                body=_webhook_body(hook, event, subject, title, url),
            )
            for hook in Webhook.objects.filter(active=True)
            if hook.wants(event.kind) and not _webhook_told(hook, event, subject)
        ]
        transaction.on_commit(lambda: _after_commit(created, mailed, deliveries))
    return created


def _after_commit(
    created: list[Notification], mailed: list[int], deliveries: list[WebhookDelivery]
) -> None:
    from reviews import live, tasks

    # What an ask asks for may have stopped waiting before it was told (a decision that
    # committed between a submission and this): such an item is resolved at once, unmailed.
    stale = resolution.settle(item for item in created if item.kind in ASKS)
    for item_id in mailed:
        if item_id not in stale:
            tasks.send_notification_email.enqueue(item_id)
    for delivery in deliveries:
        tasks.deliver_webhook.enqueue(delivery.pk)
    for recipient_id in {item.recipient_id for item in created}:
        live.inbox_changed(recipient_id)


def _same_news(event: Event, subject: Subject) -> Q:
    return Q(
        kind=event.kind, version_id=subject.version_id, run_id=subject.run_id,
        step_id=event.step_id, held_call_id=event.held_call_id,
    )  # fmt: skip


# Kinds that are news once per version, run and step: saying them again tells nothing new.
ONCE = frozenset({"version_submitted", "version_approved", "version_rejected", "step_waiting",
                  "step_needs_reconciliation", "run_failed", "run_needs_replan",
                  "call_held"})  # fmt: skip


def _already_told(event: Event, subject: Subject, people: Iterable[int]) -> set[int]:
    if event.kind not in ONCE:
        return set()
    told = Notification.objects.filter(_same_news(event, subject), recipient_id__in=list(people))
    if event.kind in ASKS:  # asked again after it stopped waiting (a step waits anew)
        told = told.filter(resolved_at__isnull=True)
    return set(told.values_list("recipient_id", flat=True))


def _webhook_told(hook: Webhook, event: Event, subject: Subject) -> bool:
    if event.kind not in ONCE:
        return False
    return hook.deliveries.filter(news=news_key(event, subject)).exists()


def news_key(event: Event, subject: Subject) -> str:
    key = f"{event.kind}:{subject.version_id or ''}:{subject.run_id or ''}:{event.step_id}"
    return key if event.held_call_id is None else f"{key}:{event.held_call_id}"


def _webhook_body(hook: Webhook, event: Event, subject: Subject, title: str, url: str) -> str:
    from reviews.webhooks import body_for

    return body_for(hook, event, subject, title, url)


def _subject(event: Event) -> Subject | None:
    from plans.models import PlanVersion
    from runs.models import Run

    run = None
    if event.run_id is not None:
        run = Run.objects.select_related("version", "plan").filter(pk=event.run_id).first()
        if run is None:
            return None
    version = None
    if event.version_id is not None:
        version = PlanVersion.objects.select_related("plan").filter(pk=event.version_id).first()
        if version is None:
            return None
    elif run is not None:
        version = run.version
    return Subject(
        plan_id=version.plan_id if version is not None else None,
        plan_name=version.plan.name if version is not None else "",
        version_id=version.pk if version is not None else None,
        version_number=version.number if version is not None else None,
        version_author_id=version.author_id if version is not None else None,
        run_id=run.pk if run is not None else None,
        run_starter_id=run.started_by_id if run is not None else None,
    )


# --- Receivers -------------------------------------------------------------------------


def _on_review_event(sender: object, **kwargs: Any) -> None:
    event = Event(
        kind=str(kwargs.get("kind", "")),
        actor=str(kwargs.get("actor", "")),
        version_id=kwargs.get("version_id"),
        run_id=kwargs.get("run_id"),
        step_id=str(kwargs.get("step_id") or ""),
        comment=str(kwargs.get("comment") or ""),
        held_call_id=kwargs.get("held_call_id"),
    )
    try:
        tell(event)
    except Exception:  # telling must never undo or fail what was decided
        logger.exception("could not tell people about %s", event)


def _on_approved(sender: object, *, version_id: int, approver: str, **kwargs: Any) -> None:
    review_event.send(
        sender=sender, kind="version_approved", actor=approver, version_id=version_id,
        run_id=None, step_id="", comment=str(kwargs.get("comment") or ""),
    )  # fmt: skip


def _on_rejected(sender: object, *, version_id: int, reviewer: str, **kwargs: Any) -> None:
    review_event.send(
        sender=sender, kind="version_rejected", actor=reviewer, version_id=version_id,
        run_id=None, step_id="", comment=str(kwargs.get("comment") or ""),
    )  # fmt: skip


def _on_changes_requested(sender: object, *, version_id: int, reviewer: str, **kwargs: Any) -> None:
    review_event.send(
        sender=sender, kind="changes_requested", actor=reviewer, version_id=version_id,
        run_id=None, step_id="", comment=str(kwargs.get("comment") or ""),
    )  # fmt: skip


def _on_submitted(sender: object, *, version_id: int, author: str, **kwargs: Any) -> None:
    review_event.send(
        sender=sender, kind="version_submitted", actor=author, version_id=version_id,
        run_id=None, step_id="", comment="",
    )  # fmt: skip


# run events -> review_event kinds
RUN_KINDS = {
    "step_awaiting_approval": "step_waiting",
    "milestone_reached": "step_waiting",  # the milestone's id stands for the step
    "step_needs_reconciliation": "step_needs_reconciliation",
    "run_failed": "run_failed",
    "run_budget_exhausted": "run_failed",
    "run_needs_replan": "run_needs_replan",
}


def _on_run_attention(
    sender: object, *, run_id: int, events: list[dict[str, Any]], **_: Any
) -> None:
    for item in events:
        kind = RUN_KINDS.get(str(item.get("event_type")))
        if kind is None:
            continue
        review_event.send(
            sender=sender, kind=kind, actor=str(item.get("actor") or ""), version_id=None,
            run_id=run_id, step_id=str(item.get("milestone") or item.get("step_id") or ""),
            comment=str(item.get("reason") or ""),
        )  # fmt: skip


def _on_call_held(sender: object, *, held_call_id: int, actor: str, **_: Any) -> None:
    try:
        held = HeldCall.objects.filter(pk=held_call_id).first()
    except Exception:  # telling must never fail the agent's call, held and committed
        logger.exception("could not read held call %s to tell people", held_call_id)
        return
    if held is None:
        return
    # What the call would do, in words an e-mail or a chat message can carry.
    arguments = json.dumps(held.arguments, ensure_ascii=False, sort_keys=True)
    review_event.send(
        sender=sender, kind="call_held", actor=actor, version_id=None, run_id=None,
        step_id="", held_call_id=held_call_id,
        comment=f"Server {held.server}, tool {held.tool}, arguments {arguments}",
    )  # fmt: skip


def connect() -> None:
    """Called once from ``ReviewsConfig.ready``."""
    from plans import signals as plan_signals
    from runs import signals as run_signals

    gateway_signals.call_held.connect(_on_call_held, dispatch_uid="reviews.call_held")
    review_event.connect(_on_review_event, dispatch_uid="reviews.notifications")
    plan_signals.version_approved.connect(_on_approved, dispatch_uid="reviews.approved")
    plan_signals.version_rejected.connect(_on_rejected, dispatch_uid="reviews.rejected")
    plan_signals.version_changes_requested.connect(
        _on_changes_requested, dispatch_uid="reviews.changes_requested"
    )
    plan_signals.version_submitted.connect(_on_submitted, dispatch_uid="reviews.submitted")
    run_signals.run_attention.connect(_on_run_attention, dispatch_uid="reviews.runs")
