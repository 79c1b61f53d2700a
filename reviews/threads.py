"""The only writer of review threads and comments, and how a version's threads read.

Who: ``review.comment`` (authors and approvers) may open a thread, reply, resolve and
reopen; requesting changes is a review decision (``plans.services.request_changes``,
``plan.approve``, never by the version's author). Every write is audited under the plan
(``object_type="plan"``) in its transaction, and tells the review loop
(``reviews.signals.review_event``) after it committed.

Carry-over: ``threads_for(version)`` lists the threads opened on ``version`` and on its
ancestors (its ``parent`` chain). A thread opened on an earlier version is compared with
``version`` through the structural diff (``forge.plan.diff_plans``): a step thread whose
step was changed or removed since is *outdated* (``"changed"``, ``"removed"``), one whose
step is unchanged carries over as it was. A thread on the whole version carries over
and is never outdated.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from accounts.permissions import ensure_permission
from audit.services import record
from forge.errors import ForgeError
from forge.plan import diff_plans
from forge.redaction import redact_text
from plans.compilation import stored_document
from plans.models import PlanVersion
from reviews.models import MAX_COMMENT, Comment, Thread
from reviews.signals import review_event

__all__ = [
    "CommentView",
    "InvalidComment",
    "ThreadView",
    "UnknownStep",
    "open_counts",
    "open_thread",
    "reopen",
    "reply",
    "resolve",
    "send_review_event",
    "thread_view",
    "threads_for",
    "threads_for_many",
]

AUDIT_OBJECT = "plan"
# How many ancestors a version's threads are gathered from, at most.
MAX_ANCESTORS = 1_000


class InvalidComment(ForgeError, ValueError):
    """A comment that is empty or too long (400 ``invalid_comment``)."""

    code = "invalid_comment"


class UnknownStep(ForgeError, LookupError):
    """A thread on a step the version does not have (400 ``unknown_step``)."""

    code = "unknown_step"


@dataclass(frozen=True)
class CommentView:
    id: int
    author: str
    body: str
    created_at: datetime


@dataclass(frozen=True)
class ThreadView:
    """A thread as seen from one version (``outdated`` and ``carried`` are relative to it)."""

    id: int
    version: int  # the number of the version it was opened on
    version_id: int
    step_id: str
    opened_by: str
    created_at: datetime
    resolved: bool
    resolved_by: str
    resolved_at: datetime | None
    outdated: bool
    outdated_reason: str  # "changed", "removed" or ""
    carried: bool  # opened on an earlier version
    comments: tuple[CommentView, ...]

    @property
    def open(self) -> bool:
        """Waiting for an answer on this version: not resolved and not outdated."""
        return not self.resolved and not self.outdated


# --- Writes ------------------------------------------------------------------------------


def open_thread(version: PlanVersion, user: Any, body: str, step_id: str = "") -> Thread:
    """Open a thread on ``step_id`` of ``version`` (or on the whole version, ``""``)."""
    ensure_permission(user, "review.comment")
    text = _clean(body)
    if step_id and step_id not in {step.get("id") for step in version.document.get("steps", [])}:
        raise UnknownStep(f"version {version.number} has no step {step_id!r}")
    with transaction.atomic():
        thread = Thread.objects.create(version=version, step_id=step_id, opened_by=user)
        comment = Comment.objects.create(thread=thread, author=user, body=text)
        _record(user, "review.thread_opened", thread, version, {"comment": comment.pk,
                                                                "text": text})  # fmt: skip
        _tell("comment_added", user, version, step_id, text)
    return thread


def reply(thread: Thread, user: Any, body: str) -> Comment:
    """Add a reply to ``thread`` (a resolved thread can be answered too)."""
    ensure_permission(user, "review.comment")
    text = _clean(body)
    with transaction.atomic():
        comment = Comment.objects.create(thread=thread, author=user, body=text)
        _record(user, "review.comment_added", thread, thread.version,
                {"comment": comment.pk, "text": text})  # fmt: skip
        _tell("comment_added", user, thread.version, thread.step_id, text)
    return comment


def resolve(thread: Thread, user: Any) -> Thread:
    """Mark ``thread`` resolved; resolving a resolved thread changes nothing."""
    return _set_resolved(thread, user, resolved=True)


def reopen(thread: Thread, user: Any) -> Thread:
    """Open a resolved thread again; reopening an open thread changes nothing."""
    return _set_resolved(thread, user, resolved=False)


def _set_resolved(thread: Thread, user: Any, *, resolved: bool) -> Thread:
    ensure_permission(user, "review.comment")
    with transaction.atomic():
        locked = Thread.objects.select_for_update().select_related("version").get(pk=thread.pk)
        if locked.resolved == resolved:
            return locked
        locked.resolved = resolved
        locked.resolved_by = user if resolved else None
        locked.resolved_at = timezone.now() if resolved else None
        locked.save(update_fields=["resolved", "resolved_by", "resolved_at"])
        action = "review.thread_resolved" if resolved else "review.thread_reopened"
        _record(user, action, locked, locked.version, {})
        if resolved:
            _tell("thread_resolved", user, locked.version, locked.step_id, "")
    return locked


# --- Reads -------------------------------------------------------------------------------


def threads_for(version: PlanVersion) -> list[ThreadView]:
    """The threads of ``version`` and its ancestors, oldest first, as seen from it."""
    return threads_for_many([version])[version.pk]


def threads_for_many(versions: Iterable[PlanVersion]) -> dict[int, list[ThreadView]]:
    """``threads_for`` of each version, by version id, in a fixed number of queries
    whatever the number of versions (the review queue shows many)."""
    versions = list(versions)
    plan_ids = {version.plan_id for version in versions}
    parents = dict(PlanVersion.objects.filter(plan_id__in=plan_ids).values_list("pk", "parent_id"))
    rows = list(
        Thread.objects.filter(version__plan_id__in=plan_ids)
        .select_related("opened_by", "resolved_by", "version")
        .defer("version__document")
        .prefetch_related("comments__author")
        .order_by("created_at", "pk")
    )
    by_origin: dict[int, list[Thread]] = {}
    for thread in rows:
        by_origin.setdefault(thread.version_id, []).append(thread)
    chains = {version.pk: _chain(version.pk, parents) for version in versions}
    origins = {pk for chain in chains.values() for pk in chain if pk in by_origin}
    documents = {
        pk: stored_document(row)
        for pk, row in PlanVersion.objects.in_bulk(
            origins | {version.pk for version in versions}
        ).items()
    }
    found: dict[int, list[ThreadView]] = {}
    for version in versions:
        views = []
        for origin in chains[version.pk]:
            if origin not in by_origin:
                continue
            changes = None
            if origin != version.pk:
                diff = diff_plans(documents[origin], documents[version.pk])
                changed = {change.step_id for change in diff.changed_steps}
                changes = (changed, set(diff.removed_steps))
            views += [thread_view(thread, version, changes) for thread in by_origin[origin]]
        views.sort(key=lambda view: (view.created_at, view.id))
        found[version.pk] = views
    return found


def thread_view(
    thread: Thread, seen_from: PlanVersion, changes: tuple[set[str], set[str]] | None = None
) -> ThreadView:
    """``thread`` as seen from ``seen_from``; ``changes`` are the (changed, removed) step
    ids between the thread's version and ``seen_from`` (None: the same version)."""
    reason = ""
    if changes is not None and thread.step_id:
        changed, removed = changes
        reason = (
            "removed" if thread.step_id in removed else "changed" if thread.step_id in changed
            else ""
        )  # fmt: skip
    return ThreadView(
        id=thread.pk,
        version=thread.version.number,
        version_id=thread.version_id,
        step_id=thread.step_id,
        opened_by=thread.opened_by.get_username(),
        created_at=thread.created_at,
        resolved=thread.resolved,
        resolved_by=thread.resolved_by.get_username() if thread.resolved_by else "",
        resolved_at=thread.resolved_at,
        outdated=bool(reason),
        outdated_reason=reason,
        carried=thread.version_id != seen_from.pk,
        comments=tuple(
            CommentView(c.pk, c.author.get_username(), c.body, c.created_at)
            for c in thread.comments.all()
        ),
    )


def open_counts(views: Iterable[ThreadView]) -> dict[str, int]:
    """Open threads per step id (``""``: the whole version)."""
    counts: dict[str, int] = {}
    for view in views:
        if view.open:
            counts[view.step_id] = counts.get(view.step_id, 0) + 1
    return counts


# --- Internals ---------------------------------------------------------------------------


def _chain(version_id: int, parents: dict[int, int | None]) -> list[int]:
    """``version_id`` and its ancestors' ids (its ``parent`` chain), newest first."""
    chain = [version_id]
    parent = parents.get(version_id)
    while parent is not None and parent not in chain and len(chain) < MAX_ANCESTORS:
        chain.append(parent)
        parent = parents.get(parent)
    return chain


def _clean(body: str) -> str:
    text = (body or "").strip()
    if not text:
        raise InvalidComment("a comment needs some words")
    if len(text) > MAX_COMMENT:
        raise InvalidComment(f"a comment has at most {MAX_COMMENT} characters")
    return redact_text(text)


def _record(
    user: Any, action: str, thread: Thread, version: PlanVersion, extra: dict[str, Any]
) -> None:
    payload = {"plan": version.plan_id, "version": version.number, "thread": thread.pk,
               "step": thread.step_id}  # fmt: skip
    record(user.get_username(), action, AUDIT_OBJECT, version.plan_id, {**payload, **extra})


def _tell(kind: str, user: Any, version: PlanVersion, step_id: str, comment: str) -> None:
    """``review_event`` once the transaction committed."""
    send_review_event(kind, user.get_username(), version.pk, step_id=step_id, comment=comment)


def send_review_event(
    kind: str, actor: str, version_id: int | None, *, step_id: str = "", comment: str = ""
) -> None:
    transaction.on_commit(
        lambda: review_event.send(
            sender=Thread,
            kind=kind,
            actor=actor,
            version_id=version_id,
            run_id=None,
            step_id=step_id,
            comment=comment,
        )  # fmt: skip
    )
