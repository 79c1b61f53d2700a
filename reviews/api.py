"""The review router: review threads on plan versions, "request changes", and putting a
draft up for review without a new version.

Reads need ``plan.view``; opening a thread, replying, resolving and reopening
``review.comment`` (authors and approvers); requesting changes ``plan.approve`` and
never of one's own version (403); submitting a draft ``plan.edit``. Versions are named
by their id (``/versions/{id}/...``, the id every version answer carries) or, for the
decision forms that post beside approve and reject, by plan and number.

No ``from __future__ import annotations`` here: ninja reads the annotations at runtime.
"""

from typing import Annotated, Any

from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import Path, Router, Status

from accounts.permissions import require_permission
from forge.ids import MAX_ID
from plans import services as plan_services
from plans.models import PlanVersion
from plans.schemas import MAX_NUMBER, ApprovalOut, DecisionIn
from reviews import threads
from reviews.models import Thread
from reviews.schemas import ReplyIn, SubmittedOut, ThreadIn, ThreadOut, ThreadsOut

router = Router(tags=["reviews"])

Id = Annotated[int, Path(ge=1, le=MAX_ID, example=1)]
Number = Annotated[int, Path(ge=1, le=MAX_NUMBER, example=1)]


@router.get("/versions/{version_id}/threads", response=ThreadsOut)
@require_permission("plan.view")
def list_threads(request: HttpRequest, version_id: Id) -> dict[str, Any]:
    """The version's review threads and those carried over from its ancestors, oldest
    first; a thread whose step changed or was removed since is ``outdated``."""
    return threads_data(_version(version_id))


@router.post("/versions/{version_id}/threads", response={201: ThreadOut})
@require_permission("review.comment")
def open_thread(request: HttpRequest, version_id: Id, body: ThreadIn) -> Status:
    """Comment on a step (``step_id``) or on the whole version (``step_id`` empty)."""
    version = _version(version_id)
    thread = threads.open_thread(version, request.auth, body.body, body.step_id)
    return Status(201, _thread(thread.pk, version))


@router.post("/threads/{thread_id}/replies", response={201: ThreadOut})
@require_permission("review.comment")
def reply(request: HttpRequest, thread_id: Id, body: ReplyIn) -> Status:
    """Answer in a thread."""
    thread = get_object_or_404(Thread.objects.select_related("version"), pk=thread_id)
    threads.reply(thread, request.auth, body.body)
    return Status(201, _thread(thread.pk, thread.version))


@router.post("/threads/{thread_id}/resolve", response=ThreadOut)
@require_permission("review.comment")
def resolve(request: HttpRequest, thread_id: Id) -> Any:
    """Mark the thread resolved (again: no change)."""
    thread = get_object_or_404(Thread.objects.select_related("version"), pk=thread_id)
    threads.resolve(thread, request.auth)
    return _thread(thread.pk, thread.version)


@router.post("/threads/{thread_id}/reopen", response=ThreadOut)
@require_permission("review.comment")
def reopen(request: HttpRequest, thread_id: Id) -> Any:
    """Open a resolved thread again (an open one: no change)."""
    thread = get_object_or_404(Thread.objects.select_related("version"), pk=thread_id)
    threads.reopen(thread, request.auth)
    return _thread(thread.pk, thread.version)


@router.post("/versions/{version_id}/request-changes", response=ApprovalOut)
@require_permission("plan.approve")
def request_changes(request: HttpRequest, version_id: Id, body: DecisionIn) -> Any:
    """Send a submitted version back to its author with a comment (403 for its author):
    status ``changes_requested``, which cannot run."""
    return _request_changes(request, _version(version_id), body.comment)


@router.post("/plans/{plan_id}/versions/{n}/request-changes", response=ApprovalOut)
@require_permission("plan.approve")
def request_changes_by_number(
    request: HttpRequest, plan_id: Id, n: Number, body: DecisionIn
) -> Any:
    """``/versions/{id}/request-changes`` by plan and version number (beside approve and
    reject)."""
    version = get_object_or_404(_versions(), plan_id=plan_id, number=n)
    return _request_changes(request, version, body.comment)


@router.post("/versions/{version_id}/submit", response=SubmittedOut)
@require_permission("plan.edit")
def submit(request: HttpRequest, version_id: Id) -> dict[str, Any]:
    """Put a draft up for review as it is (no new version): it waits in the review queue.
    A version already submitted is left as is; a draft with errors answers 409
    ``has_errors``."""
    # plans tells of the submission (plans.signals.version_submitted, once committed);
    # reviews.notifications turns it into the review_event the inbox hears.
    submitted = plan_services.submit_version(_version(version_id), request.auth)
    return {"plan": submitted.plan_id, "version": submitted.number, "version_id": submitted.pk,
            "status": submitted.status, "submitted": submitted.submitted}  # fmt: skip


# --- Helpers ----------------------------------------------------------------------------


def threads_data(version: PlanVersion) -> dict[str, Any]:
    views = threads.threads_for(version)
    return {
        "version": version.number,
        "version_id": version.pk,
        "status": version.status,
        "threads": views,
        "open": sum(1 for view in views if view.open),
    }


def _request_changes(request: HttpRequest, version: PlanVersion, comment: str) -> Any:
    # plans tells of the decision (plans.signals.version_changes_requested, once
    # committed); reviews.notifications turns it into the review_event the inbox hears.
    return plan_services.request_changes(version, request.auth, comment)


def _versions() -> Any:
    return PlanVersion.objects.select_related("plan", "author", "parent")


def _version(version_id: int) -> PlanVersion:
    return get_object_or_404(_versions(), pk=version_id)


def _thread(thread_id: int, version: PlanVersion) -> threads.ThreadView:
    thread = get_object_or_404(
        Thread.objects.select_related("opened_by", "resolved_by", "version").prefetch_related(
            "comments__author"
        ),
        pk=thread_id,
    )
    return threads.thread_view(thread, version)
