"""What happened that somebody may need to hear about: the seam between the parts of the
review loop that decide (approvals, review threads) and those that tell people (the inbox
and notifications, ``reviews.notifications``).

``review_event`` is sent after the change committed (``transaction.on_commit``), with:

- ``kind``: one of ``KINDS``;
- ``actor``: the username who did it;
- ``version_id``: the plan version concerned, or None;
- ``run_id``: the run concerned, or None;
- ``step_id``: the step concerned (a thread on a step, a step waiting), or "";
- ``comment``: the words the actor wrote, or "".

Receivers decide who is told; senders never name recipients.
"""

from __future__ import annotations

from django.dispatch import Signal

__all__ = ["KINDS", "review_event"]

KINDS = (
    "version_submitted",  # a version waits for review
    "version_approved",
    "version_rejected",
    "changes_requested",  # a review asking the author for changes
    "comment_added",  # a comment on a step or a whole version, or a reply in a thread
    "thread_resolved",
    "step_waiting",  # a run's step waits for a person's approval
    "run_failed",
    "run_needs_replan",
)

review_event = Signal()
