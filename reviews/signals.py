"""What happened that somebody may need to hear about: the seam between the parts of the
review loop that decide (approvals, review threads) and those that tell people (the inbox
and notifications, ``reviews.notifications``).

``review_event`` is sent after the change committed (``transaction.on_commit``), with:

- ``kind``: one of ``KINDS``;
- ``actor``: the username who did it;
- ``version_id``: the plan version concerned, or None;
- ``run_id``: the run concerned, or None;
- ``step_id``: the step concerned (a thread on a step, a step waiting), or "";
- ``comment``: the words the actor wrote, or "";
- ``held_call_id``: the gateway's held call concerned (``call_held``), or None.

Receivers decide who is told; senders never name recipients. ``Event`` is one
``review_event`` as its receiver (``reviews.notifications``) holds it, and ``Subject``
what it concerns, looked up once; the deliveries (e-mail, webhooks) are written from them.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.dispatch import Signal

__all__ = ["ASKS", "KINDS", "Event", "Subject", "review_event"]

KINDS = (
    "version_submitted",  # a version waits for review
    "version_approved",
    "version_rejected",
    "changes_requested",  # a review asking the author for changes
    "comment_added",  # a comment on a step or a whole version, or a reply in a thread
    "thread_resolved",
    "step_waiting",  # a run's step waits for a person's approval
    "step_needs_reconciliation",  # a step interrupted mid-effect waits for an operator
    "run_failed",
    "run_needs_replan",
    "call_held",  # an agent's call through the gateway waits for a person's approval
)

# The kinds that ask a person to act rather than only tell them: their inbox items
# resolve themselves once what they ask for no longer waits (``reviews.resolution``).
ASKS = frozenset(
    {
        "version_submitted",
        "changes_requested",
        "step_waiting",
        "step_needs_reconciliation",
        "run_needs_replan",
        "call_held",
    }
)

review_event = Signal()


@dataclass(frozen=True)
class Event:
    """One ``review_event``, with what it concerns looked up once."""

    kind: str
    actor: str
    version_id: int | None = None
    run_id: int | None = None
    step_id: str = ""
    comment: str = ""
    held_call_id: int | None = None  # a gateway call held for people (``call_held``)


@dataclass(frozen=True)
class Subject:
    """What an event concerns, as its recipients and its words need it."""

    plan_id: int | None
    plan_name: str
    version_id: int | None
    version_number: int | None
    version_author_id: int | None
    run_id: int | None
    run_starter_id: int | None
