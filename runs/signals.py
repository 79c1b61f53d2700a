"""What runs tell the floors above them, each sent after a run's events commit; runs
never name who is told.

- ``run_attention`` (``run_id``, ``events``): among the events is one a person may need to
  hear about (``ATTENTION``: a step or milestone waiting for a person, a step to reconcile,
  a failure); ``events`` is a list of ``{"seq", "event_type", "step_id",
  "actor", "reason", "milestone"}`` in seq order (``milestone``: the id of a milestone
  reached, which waits for a person's review, else ""). The review loop turns them into
  inbox items and notifications (``reviews.notifications``).
- ``waits_ended`` (``run_id``): among the events is one after which something a person
  was asked to do may no longer wait (``ENDS_WAIT``: a step approved, rejected or
  reconciled, a milestone reviewed, the run resumed, stopped for a replan, or over), or a
  person's approval of a step was counted toward its approval rules without being enough
  (the step still waits, no longer for them: ``runs.services.approve_step``). The review
  loop resolves the inbox items that asked for it (``reviews.resolution``).
"""

from __future__ import annotations

from django.dispatch import Signal

from forge.runtime.events import EventType

__all__ = ["ATTENTION", "ENDS_WAIT", "run_attention", "waits_ended"]

ATTENTION = frozenset(
    {
        EventType.STEP_AWAITING_APPROVAL,  # a person must approve the step
        EventType.MILESTONE_REACHED,  # a person must review the milestone
        EventType.STEP_NEEDS_RECONCILIATION,  # an operator must say what happened
        EventType.RUN_FAILED,
        EventType.RUN_BUDGET_EXHAUSTED,  # a failure by another name
        EventType.RUN_NEEDS_REPLAN,
    }
)

ENDS_WAIT = frozenset(
    {
        EventType.STEP_APPROVED,
        EventType.STEP_REJECTED,
        EventType.STEP_RECONCILED,  # an operator said what happened
        EventType.MILESTONE_REVIEWED,
        EventType.RUN_RESUMED,
        EventType.RUN_NEEDS_REPLAN,  # its waiting steps wait no more
        EventType.RUN_SUCCEEDED,
        EventType.RUN_FAILED,
        EventType.RUN_BUDGET_EXHAUSTED,
        EventType.RUN_CANCELLED,
    }
)

run_attention = Signal()
waits_ended = Signal()
