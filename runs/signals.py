"""What runs tell the floors above them: ``run_attention`` is sent after a run's events
commit, when among them is one a person may need to hear about (``ATTENTION``), with
``run_id`` and ``events``: a list of ``{"seq", "event_type", "step_id", "actor",
"reason", "milestone"}`` in seq order (``milestone``: the id of a milestone reached, which
waits for a person's review, else ""). The review loop turns them into inbox items and
notifications (``reviews.notifications``); runs never name who is told."""

from __future__ import annotations

from django.dispatch import Signal

from forge.runtime.events import EventType

__all__ = ["ATTENTION", "run_attention"]

ATTENTION = frozenset(
    {
        EventType.STEP_AWAITING_APPROVAL,  # a person must approve the step
        EventType.MILESTONE_REACHED,  # a person must review the milestone
        EventType.RUN_FAILED,
        EventType.RUN_BUDGET_EXHAUSTED,  # a failure by another name
        EventType.RUN_NEEDS_REPLAN,
    }
)

run_attention = Signal()
