"""Run events: every transition of a run or a step, with the fields of seed 003.

One flat, frozen record serves the local runner, the database row and the websocket
alike, and ``forge.runtime.state.apply_event`` rebuilds a run's state from a list of
them. ``seq`` is assigned by whoever stores the event (gapless per run).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

__all__ = ["EventType", "RunEvent"]


class EventType:
    """The ``event_type`` values, past tense."""

    RUN_STARTED = "run_started"
    RUN_AWAITING_APPROVAL = "run_awaiting_approval"
    RUN_CONTINUED = "run_continued"
    RUN_RESUMED = "run_resumed"
    RUN_NEEDS_REPLAN = "run_needs_replan"
    RUN_SUCCEEDED = "run_succeeded"
    RUN_FAILED = "run_failed"
    RUN_BUDGET_EXHAUSTED = "run_budget_exhausted"
    RUN_CANCELLED = "run_cancelled"
    # A planner's work for a run that needs a replan, noted as it happens: it started,
    # proposed a version (or none), and a person approved that version. None changes
    # the run's state (the new version resumes the run only through the gate, as
    # run_resumed); the run's history and page say what is going on meanwhile.
    RUN_REPLAN_STARTED = "run_replan_started"
    RUN_REPLAN_PROPOSED = "run_replan_proposed"
    RUN_REPLAN_FAILED = "run_replan_failed"
    RUN_REPLAN_APPROVED = "run_replan_approved"
    STEP_READY = "step_ready"
    STEP_AWAITING_APPROVAL = "step_awaiting_approval"
    STEP_APPROVED = "step_approved"
    STEP_REJECTED = "step_rejected"
    STEP_STARTED = "step_started"
    STEP_SUCCEEDED = "step_succeeded"
    STEP_FAILED = "step_failed"
    STEP_INVALID = "step_invalid"
    STEP_RETRIED = "step_retried"
    STEP_NEEDS_RECONCILIATION = "step_needs_reconciliation"
    STEP_RECONCILED = "step_reconciled"
    STEP_RESET = "step_reset"
    STEP_CANCELLED = "step_cancelled"
    # A re-run keeps a step that an earlier run of the same version completed: its
    # recorded output, verdict and artifacts, without running it (facts: the output).
    STEP_PRESERVED = "step_preserved"
    # A milestone that ends in a review: every step of it succeeded, the run pauses
    # before the next milestone (facts: milestone, title, steps); a person let it go on
    # (actor; facts: milestone, comment).
    MILESTONE_REACHED = "milestone_reached"
    MILESTONE_REVIEWED = "milestone_reviewed"


@dataclass(frozen=True)
class RunEvent:
    run_id: str
    event_type: str
    plan_id: str = ""
    plan_version: int = 1
    step_id: str | None = None
    seq: int = 0
    transition: tuple[str, str] | None = None  # (from, to) of the step, or of the run
    step_status: str | None = None
    blocked_reason: str = ""
    facts: Any = None
    # What the step's attempt left for review (forge.runtime.results.artifact_refs):
    # logs, diffs, previews, each named with the execution record that keeps it.
    artifacts: tuple[Any, ...] = ()
    tool_name: str = ""
    tool_args_hash: str = ""
    permission_scope: str = ""
    side_effect: str = ""
    latency_ms: float | None = None
    tokens: int = 0
    cost: float = 0.0
    model: str = ""
    verdict: Any = None
    actor: str = ""
    created_at: datetime = field(default_factory=lambda: datetime.now(UTC), compare=False)

    def to_data(self) -> dict[str, Any]:
        """JSON-ready fields, as stored and as streamed to browsers."""
        return {
            "run_id": self.run_id,
            "plan_id": self.plan_id,
            "plan_version": self.plan_version,
            "step_id": self.step_id,
            "seq": self.seq,
            "event_type": self.event_type,
            "transition": list(self.transition) if self.transition else None,
            "step_status": self.step_status,
            "blocked_reason": self.blocked_reason,
            "facts": self.facts,
            "artifacts": list(self.artifacts),
            "tool_name": self.tool_name,
            "tool_args_hash": self.tool_args_hash,
            "permission_scope": self.permission_scope,
            "side_effect": self.side_effect,
            "latency_ms": self.latency_ms,
            "tokens": self.tokens,
            "cost": self.cost,
            "model": self.model,
            "verdict": self.verdict,
            "actor": self.actor,
            "created_at": self.created_at.isoformat(),
        }
