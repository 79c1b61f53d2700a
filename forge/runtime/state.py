"""A run's state as a value, and ``apply_event``: the one function that changes it.

Everything the scheduler decides is written down as events first; the state is only
ever the fold of those events, so a run can always be rebuilt from what was stored.
Steps live in persistent maps (``immutables.Map``, a HAMT): each event then costs the
same whether the plan has ten steps or ten thousand, where copying a dict per event made
a run quadratic in its size. ``by_status`` indexes the steps by status for the same
reason: admission and the run's status never scan every step.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, cast

from immutables import Map

from forge.runtime.events import EventType, RunEvent
from forge.runtime.status import RunStatus, StepStatus
from forge.runtime.waits import waiting_reason

__all__ = ["RunState", "StepState", "apply_event", "rebuild"]


@dataclass(frozen=True)
class StepState:
    status: StepStatus = "pending"
    attempt: int = 0
    output: Any = None
    error: str = ""
    verdict: Any = None
    tokens: int = 0
    cost: float = 0.0
    approved_hash: str = ""  # the arguments' hash an approval was given for
    approved_by: str = ""
    approved_preview: str = ""  # the preview's hash that approval was given for
    preview_hash: str = ""  # the preview shown while the step waits for approval
    # That preview's refusal ({code, reason, hint}) when its call cannot run: no
    # approval is taken for it (forge.runners.preview).
    refusal: Mapping[str, Any] | None = None
    reserved_tokens: int = 0  # the estimate reserved at start, until the real use is known
    reserved_cost: float = 0.0
    artifacts: tuple[Mapping[str, Any], ...] = ()  # of the attempt that settled it
    interruptions: int = 0  # attempts lost with their worker and retried, this version


@dataclass(frozen=True)
class RunState:
    run_id: str
    steps: Map[str, StepState]
    by_status: Map[str, Map[str, None]]
    status: RunStatus = "queued"
    plan_version: int = 1
    used_steps: int = 0
    used_tokens: int = 0
    used_cost: float = 0.0
    replans: int = 0
    failed_step: str | None = None
    reset: tuple[str, ...] = ()
    preserved: tuple[str, ...] = ()
    last_seq: int = 0
    blocked_reason: str = ""
    # The version approval the run executes under (forge.runtime.gate.VersionApproval's
    # data), as the run_started or run_resumed event recorded it.
    approval: Mapping[str, Any] | None = None
    # Milestones that end in a review, once reached: "awaiting" until a person lets the
    # run go on, then "reviewed".
    reviews: Map[str, str] = Map()

    @property
    def awaiting_review(self) -> tuple[str, ...]:
        """The milestones whose review the run waits for, sorted."""
        return tuple(sorted(m for m, status in self.reviews.items() if status == "awaiting"))

    @classmethod
    def new(cls, run_id: str, step_ids: Iterable[str], plan_version: int = 1) -> RunState:
        steps = Map({step_id: StepState() for step_id in step_ids})
        return cls(run_id, steps, _index(steps), plan_version=plan_version)

    def with_status(self, *statuses: StepStatus) -> tuple[str, ...]:
        """The ids of the steps in any of ``statuses``, sorted."""
        found: list[str] = []
        for status in statuses:
            found.extend(self.by_status.get(status, _EMPTY))
        return tuple(sorted(found))

    def count(self, status: StepStatus) -> int:
        return len(self.by_status.get(status, _EMPTY))


_EMPTY: Map[str, None] = Map()


def _index(steps: Mapping[str, StepState]) -> Map[str, Map[str, None]]:
    index: dict[str, dict[str, None]] = {}
    for step_id, step in steps.items():
        index.setdefault(step.status, {})[step_id] = None
    return Map({status: Map(ids) for status, ids in index.items()})


def _moved(
    index: Map[str, Map[str, None]], step_id: str, before: str | None, after: str
) -> Map[str, Map[str, None]]:
    if before == after:
        return index
    if before is not None:
        index = index.set(before, index.get(before, _EMPTY).delete(step_id))
    return index.set(after, index.get(after, _EMPTY).set(step_id, None))


_MILESTONE_EVENTS = frozenset({EventType.MILESTONE_REACHED, EventType.MILESTONE_REVIEWED})
# Step statuses that wait for a person, and run statuses in which the run's
# blocked_reason says who it waits for (forge.runtime.waits).
_PEOPLE_WAIT = frozenset({"awaiting_approval", "needs_reconciliation"})
_WAITING_RUN = frozenset({"running", "awaiting_approval"})

_SETTLES_USAGE = frozenset(
    {
        EventType.STEP_AWAITING_APPROVAL,  # back from running when its preview changed
        EventType.STEP_SUCCEEDED,
        EventType.STEP_FAILED,
        EventType.STEP_INVALID,
        EventType.STEP_RETRIED,
        EventType.STEP_RECONCILED,
        EventType.STEP_NEEDS_RECONCILIATION,
    }
)


# Events that state how a step ended: its output (or what it produced before failing),
# the contract verdict and the error.
_SETTLES_OUTCOME = frozenset(
    {
        EventType.STEP_SUCCEEDED,
        EventType.STEP_RECONCILED,
        EventType.STEP_FAILED,
        EventType.STEP_INVALID,
        EventType.STEP_PRESERVED,  # a re-run keeps the output an earlier run recorded
    }
)


def apply_event(state: RunState, event: RunEvent) -> RunState:
    """The state after ``event``. Pure: ``state`` is not changed.

    Budget use is reserved when a step starts (the event carries the step's estimate)
    and settled when it ends (the event carries what was really used), so concurrent
    steps can never together overspend what admission allowed.

    While the run is running or awaiting approval, its ``blocked_reason`` names what
    waits for a person and who can act (``forge.runtime.waits``), worked out again
    whenever a step enters or leaves such a wait.
    """
    changes: dict[str, Any] = {"last_seq": max(state.last_seq, event.seq)}
    waits_moved = False
    if event.step_id is not None and event.step_status is not None:
        known = state.steps.get(event.step_id)
        step = known or StepState()
        updated = _apply_to_step(step, event)
        waits_moved = step.status in _PEOPLE_WAIT or updated.status in _PEOPLE_WAIT
        changes["steps"] = state.steps.set(event.step_id, updated)
        changes["by_status"] = _moved(
            state.by_status, event.step_id, known.status if known else None, updated.status
        )
        if event.event_type == EventType.STEP_STARTED:
            changes["used_steps"] = state.used_steps + 1
            changes["used_tokens"] = state.used_tokens + event.tokens
            changes["used_cost"] = state.used_cost + event.cost
        elif event.event_type in _SETTLES_USAGE:
            changes["used_tokens"] = state.used_tokens + event.tokens - step.reserved_tokens
            changes["used_cost"] = state.used_cost + event.cost - step.reserved_cost
    elif event.event_type in _MILESTONE_EVENTS:
        facts = event.facts if isinstance(event.facts, Mapping) else {}
        status = "awaiting" if event.event_type == EventType.MILESTONE_REACHED else "reviewed"
        changes["reviews"] = state.reviews.set(str(facts.get("milestone", "")), status)
        waits_moved = True
    elif event.transition is not None:
        changes["status"] = cast(RunStatus, event.transition[1])
        changes["blocked_reason"] = event.blocked_reason
        changes.update(_apply_to_run(state, event))
        waits_moved = True
    after = replace(state, **changes)
    if waits_moved and after.status in _WAITING_RUN:
        waiting = after.by_status.get("awaiting_approval", _EMPTY)
        refused = [step for step in waiting if after.steps[step].refusal is not None]
        reason = waiting_reason(
            [step for step in waiting if step not in refused] if refused else waiting,
            after.by_status.get("needs_reconciliation", _EMPTY),
            after.awaiting_review,
            refused,
        )
        if reason != after.blocked_reason:
            after = replace(after, blocked_reason=reason)
    return after


def _apply_to_step(step: StepState, event: RunEvent) -> StepState:
    kind = event.event_type
    status = cast(StepStatus, event.step_status)
    if kind == EventType.STEP_STARTED:
        return replace(
            step,
            status=status,
            attempt=step.attempt + 1,
            error="",
            verdict=None,
            reserved_tokens=event.tokens,
            reserved_cost=event.cost,
        )
    if kind in _SETTLES_USAGE:
        step = replace(
            step,
            tokens=step.tokens + event.tokens,
            cost=step.cost + event.cost,
            reserved_tokens=0,
            reserved_cost=0.0,
        )
    if kind in _SETTLES_OUTCOME:
        return replace(
            step,
            status=status,
            output=event.facts,
            verdict=event.verdict,
            error=event.blocked_reason,
            artifacts=event.artifacts,
        )
    facts = event.facts if isinstance(event.facts, Mapping) else {}
    if kind == EventType.STEP_APPROVED:
        return replace(
            step,
            status=status,
            approved_hash=event.tool_args_hash,
            approved_by=event.actor,
            approved_preview=str(facts.get("preview_hash", "")),
        )
    if kind == EventType.STEP_AWAITING_APPROVAL:
        # A new wait (first, or after the preview changed) voids any earlier approval.
        preview = facts.get("preview")
        return replace(
            step,
            status=status,
            error=event.blocked_reason,
            approved_hash="",
            approved_by="",
            approved_preview="",
            preview_hash=str(preview.get("hash", "")) if isinstance(preview, Mapping) else "",
            refusal=_refusal(preview),
        )
    if kind == EventType.STEP_RETRIED:
        lost = facts.get("interruptions")
        return replace(
            step,
            status=status,
            error=event.blocked_reason,
            artifacts=event.artifacts,
            interruptions=lost if isinstance(lost, int) else step.interruptions,
        )
    return replace(step, status=status, error=event.blocked_reason or step.error)


def _apply_to_run(state: RunState, event: RunEvent) -> dict[str, Any]:
    facts = event.facts if isinstance(event.facts, Mapping) else {}
    if event.event_type == EventType.RUN_STARTED:
        approval = facts.get("approval")
        changes: dict[str, Any] = {"plan_version": event.plan_version, "approval": approval}
        # The first event names the steps, so a run rebuilds from its events alone.
        if "steps" in facts and not state.steps:
            steps = Map({sid: StepState() for sid in facts["steps"]})
            changes.update(steps=steps, by_status=_index(steps))
        if facts.get("reviewed"):  # a re-run keeps reviews of milestones it keeps whole
            changes["reviews"] = Map(dict.fromkeys(facts["reviewed"], "reviewed"))
        return changes
    if event.event_type == EventType.RUN_NEEDS_REPLAN:
        return {
            "failed_step": facts.get("failed_step"),
            "reset": tuple(facts.get("reset", ())),
            "preserved": tuple(facts.get("preserved", ())),
        }
    if event.event_type == EventType.RUN_RESUMED:
        preserved = set(facts.get("preserved", ()))
        steps = Map(
            {
                sid: state.steps[sid] if sid in preserved and sid in state.steps else StepState()
                for sid in facts.get("steps", ())
            }
        )
        return {
            "plan_version": event.plan_version,
            "approval": facts.get("approval"),
            "replans": state.replans + 1,
            # reviews stay given only for milestones whose steps were all preserved
            "reviews": Map(dict.fromkeys(facts.get("reviewed", ()), "reviewed")),
            "steps": steps,
            "by_status": _index(steps),
            "failed_step": None,
            "reset": (),
            "preserved": (),
        }
    return {}


def rebuild(run_id: str, events: Iterable[RunEvent], step_ids: Iterable[str] = ()) -> RunState:
    """Fold ``events`` (in seq order) over a fresh state; the ``run_started`` event names
    the steps, so ``step_ids`` is needed only for a history that lacks it."""
    state = RunState.new(run_id, step_ids)
    for event in events:
        state = apply_event(state, event)
    return state


def _refusal(preview: Any) -> Mapping[str, Any] | None:
    """The refusal a step's preview carries, when its call cannot run."""
    if not isinstance(preview, Mapping) or preview.get("runnable", True) is not False:
        return None
    refusal = preview.get("refusal")
    return refusal if isinstance(refusal, Mapping) else {"code": "call_refused", "reason": ""}
