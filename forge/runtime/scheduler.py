"""The Scheduler: readiness, admission and the transitions of SPEC section 5.

Shaped like ``graphlib.TopologicalSorter``: ``prepare()``, then ``get_ready()`` for the
steps admitted to start now, ``done()`` with each result, while ``is_active()``. The
people-facing moves (approve, reject, cancel, resume, reconcile) and a lost worker
(``interrupt``) are methods too. Every method decides by writing events and folding them
with ``apply_event``, so ``state`` is always the fold of ``events``, and a scheduler
built over a rebuilt state continues exactly where the stored one stopped. It never runs
a tool: the caller executes admitted steps through the ToolExecutor.

The approval gate (``forge.runtime.gate``) is part of admission: ``prepare`` and
``resume`` take the version's approval and refuse one the gate does not clear, the
event records it, and ``admit`` checks it again against the graph it is about to run,
so no path can start a step of a version that is not approved as it stands. A step
waiting for approval carries its preview (from the injected ``Previewer``) in its
event; its approval binds the arguments' and the preview's hashes. A preview that says
its call will be refused (``runnable: false``) takes no approval: every host's way of
approving a step comes here, so the web, ``forge run`` and MCP refuse it alike.

Milestones that end in a review (``forge.compiler.milestones``) pause the run: once
every step of one has succeeded, ``milestone_reached`` is written and no step of a later
milestone becomes ready until ``review_milestone`` records a person's review
(``milestone_reviewed``); with nothing else to do the run is ``awaiting_approval`` in the
meantime, as for a step approval, and it cannot succeed while a review is due. Who may
review (someone other than the version's author) is the host's check, as for steps. A
step left to reconcile after its worker died waits for a person the same way. Whatever
the run waits for, its ``blocked_reason`` names the step or milestone and the role that
can act (``forge.runtime.waits``, applied by the fold).

A step whose arguments take values from earlier steps' outputs is resolved when it
becomes ready (``call``, through ``forge.runtime.calls``): its approval, preview and
events name the resolved call, and the host runs exactly that call. A step whose call
cannot be resolved (an output without the path, a value of the wrong type) fails then,
with the reason, before anyone is asked to approve it.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from forge.compiler import ExecutableGraph, ExecutableNode, ToolBinding
from forge.compiler.milestones import review_holds
from forge.errors import ForgeError
from forge.rules import FOUR_EYES, Approver
from forge.runtime.budget import WorkflowBudget
from forge.runtime.calls import UnresolvedCall, call_of
from forge.runtime.contracts import check_output, verdict_data
from forge.runtime.dependencies import preserved_steps, reset_steps, unmet_dependencies
from forge.runtime.events import EventType, RunEvent
from forge.runtime.gate import ApprovalGate, GateRefused, VersionApproval, refuse_self_decision
from forge.runtime.previews import Previewer
from forge.runtime.reruns import Rerun
from forge.runtime.reservations import DEFAULT_ALLOWANCE, StepAllowance, reservation
from forge.runtime.results import ToolResult
from forge.runtime.state import RunState, apply_event
from forge.runtime.status import FINAL_RUN_STATUSES, StepStatus
from forge.runtime.waits import waiting_reason

__all__ = ["Scheduler", "TransitionRefused", "approval_hash", "refused_approval"]


_REPLAN_NOTES = frozenset(
    {
        EventType.RUN_REPLAN_STARTED,
        EventType.RUN_REPLAN_PROPOSED,
        EventType.RUN_REPLAN_FAILED,
        EventType.RUN_REPLAN_APPROVED,
    }
)


class TransitionRefused(ForgeError, ValueError):
    """A move the run's or step's current status does not allow."""

    code = "transition_refused"


def approval_hash(node: ExecutableNode, call: ToolBinding | None = None) -> str:
    """What an approval binds: the exact arguments (of ``call``, the step's resolved
    call, when its arguments take values from earlier steps: ``Scheduler.call``), or the
    agent step's whole content."""
    if call is not None:
        return call.args_hash
    return node.binding.args_hash if node.binding is not None else node.fingerprint


def refused_approval(step_id: str, refusal: Mapping[str, Any]) -> str:
    """Why a step whose preview carries ``refusal`` cannot be approved, and what to do."""
    code, reason, hint = (str(refusal.get(key, "")) for key in ("code", "reason", "hint"))
    fix = f"; {hint}" if hint else ""
    return (
        f"step {step_id!r} cannot be approved: its call will be refused ({reason} [{code}])"
        f"{fix}. Reject it to replan"
    )


def repeatable(node: ExecutableNode) -> bool:
    """Whether running the step again is harmless (reads, no effect, or idempotent)."""
    if node.binding is not None:
        return node.binding.repeatable
    return all(tool.repeatable for tool in node.allowed_tools)


class Scheduler:
    def __init__(
        self,
        graph: ExecutableGraph,
        run_id: str,
        *,
        plan_id: str = "",
        plan_version: int = 1,
        state: RunState | None = None,
        max_concurrency: int = 0,
        gate: ApprovalGate | None = None,
        previewer: Previewer | None = None,
        allowance: StepAllowance = DEFAULT_ALLOWANCE,
        max_lease_retries: int = 3,
    ) -> None:
        if max_lease_retries < 0:
            raise ValueError(f"max_lease_retries must not be negative, got {max_lease_retries}")
        self.graph = graph
        # What an agent step without an estimate reserves (forge.runtime.reservations).
        self.allowance = allowance
        # How many times a repeatable step whose worker was lost is started again before
        # it fails (``interrupt``).
        self.max_lease_retries = max_lease_retries
        self.plan_id = plan_id
        self.state = state or RunState.new(run_id, graph.order, plan_version=plan_version)
        self.max_concurrency = max_concurrency
        # Without a gate nothing is admitted: the gate is not optional, only injected.
        self.gate = gate
        self.previewer = previewer
        self.events: list[RunEvent] = []
        # The (graph, approval) pair the gate last cleared, so admission checks once per
        # version rather than once per step.
        self._cleared: tuple[ExecutableGraph, object] | None = None
        # Ready steps by topological position, kept as events make steps ready, so that
        # admission never sorts or scans the whole plan. Entries go stale when a step
        # leaves "ready" otherwise (cancel, resume); get_ready drops those as it meets them.
        self._ready_heap: list[tuple[int, str]] = []
        self._position: dict[str, int] = {}
        self._heap_graph: ExecutableGraph | None = None
        # Per step, how many dependencies have not succeeded yet (graphlib's
        # npredecessors), filled lazily from the state: a join of a thousand steps is then
        # checked in constant time each time one of them succeeds.
        self._unmet: dict[str, int] = {}
        self._unmet_graph: ExecutableGraph | None = None
        # Resolved calls of steps whose arguments take values from earlier outputs, while
        # the step is live: those outputs cannot change until a resume, which swaps the
        # graph (and clears this).
        self._calls: dict[str, ToolBinding] = {}
        self._calls_graph: ExecutableGraph | None = None
        # Per graph: the reviews that hold each step, and each reviewed milestone's steps.
        self._holds: dict[str, tuple[str, ...]] = {}
        self._reviewed_steps: dict[str, tuple[str, ...]] = {}
        self._milestones_graph: ExecutableGraph | None = None

    # -- graphlib's shape -------------------------------------------------------------

    def prepare(
        self, approval: VersionApproval | None, rerun: Rerun | None = None
    ) -> list[RunEvent]:
        """Start the run: ``queued`` to ``running``, roots become ready (or wait).

        A re-run (``forge.runtime.reruns``) first keeps the steps it preserves, each with
        the output the earlier run recorded (``step_preserved``), as a resume keeps its
        preserved steps: they never run again, and their dependents start from them.

        Raises ``GateRefused`` (and writes nothing) unless the gate clears ``approval``
        for this graph."""
        mark = len(self.events)
        if self.state.status != "queued":
            raise TransitionRefused(f"run is {self.state.status}, not queued")
        cleared = self._clear(self.graph, approval, self.state.plan_version)
        facts: dict[str, Any] = {"steps": list(self.graph.order), "approval": cleared.to_data()}
        if rerun is not None:
            facts.update(rerun_of=rerun.of, rerun=rerun.facts(), reviewed=list(rerun.reviewed))
        self._run_transition(EventType.RUN_STARTED, "running", expect=("queued",), facts=facts)
        if rerun is not None:
            for step_id in rerun.preserved:
                kept = rerun.kept[step_id]
                self._step(
                    EventType.STEP_PRESERVED,
                    step_id,
                    "succeeded",
                    facts=kept.output,
                    verdict=kept.verdict,
                    artifacts=kept.artifacts,
                )
            for milestone in self.graph.document.milestones:  # kept whole, not yet reviewed
                if milestone.review and milestone.steps:
                    self._reach(milestone.steps[0])
        self._advance(self.graph.order)
        return self.events[mark:]

    def get_ready(self) -> tuple[str, ...]:
        """Admit ready steps now, in topological order, within the concurrency limit and
        the budget; each admitted step is ``running`` when this returns."""
        admitted: list[str] = []
        heap = self._ready()
        while heap and self.state.status == "running":
            step_id = heap[0][1]
            step = self.state.steps.get(step_id)
            if step is None or step.status != "ready":
                heapq.heappop(heap)
                continue
            if not self.admit(step_id):
                break
            heapq.heappop(heap)
            admitted.append(step_id)
        return tuple(admitted)

    def next_ready(self, skip: Callable[[str], bool] | None = None) -> str | None:
        """The first ready step in topological order that ``skip`` does not rule out,
        without admitting it (a host that has a free hand asks which step to take)."""
        heap = self._ready()
        passed: list[tuple[int, str]] = []
        found = None
        while heap:
            step_id = heap[0][1]
            step = self.state.steps.get(step_id)
            if step is None or step.status != "ready":
                heapq.heappop(heap)
            elif skip is not None and skip(step_id):
                passed.append(heapq.heappop(heap))
            else:
                found = step_id
                break
        for entry in passed:
            heapq.heappush(heap, entry)
        return found

    def admit(self, step_id: str) -> bool:
        """Start one ready step if the run, the concurrency limit and the budget allow it
        (a worker that was handed this step asks for exactly it). A step the budget
        cannot admit ends the run ``budget_exhausted``, and every step that has not
        started then is cancelled with that reason: nothing stays ready or pending.

        A step reserves its estimate, or, for an agent step without one, the
        allowance (``forge.runtime.reservations``), so the steps running together never
        reserve more than the budget has left."""
        step = self.state.steps.get(step_id)
        if self.state.status != "running" or step is None or step.status != "ready":
            return False
        if self.max_concurrency and self.state.count("running") >= self.max_concurrency:
            return False
        refusal = self._gate_refusal()
        if refusal is not None:
            code, message = refusal
            self._run_transition(
                EventType.RUN_FAILED,
                "failed",
                reason=f"the approval gate refused to start step {step_id!r}: {message} [{code}]",
                facts={"gate": code},
            )
            return False
        try:
            self.call(step_id)
        except UnresolvedCall as unresolved:
            self._unresolved(step_id, unresolved)
            return False
        tokens, cost = reservation(
            self.graph.nodes[step_id], self.graph.document.budget, self.allowance
        )
        if not self._budget().can_reserve(1, tokens, cost):
            reason = f"budget cannot admit step {step_id!r}"
            self._run_transition(EventType.RUN_BUDGET_EXHAUSTED, "budget_exhausted", reason=reason)
            for never_started in self.state.with_status("pending", "ready", "awaiting_approval"):
                self._step(
                    EventType.STEP_CANCELLED,
                    never_started,
                    "cancelled",
                    reason=f"the run's budget is exhausted ({reason})",
                )
            return False
        self._step(EventType.STEP_STARTED, step_id, "running", tokens=tokens, cost=cost)
        return True

    def done(self, step_id: str, result: ToolResult) -> list[RunEvent]:
        """Record a finished step: succeeded (valid output), invalid, failed, or retried."""
        mark = len(self.events)
        self._expect_step(step_id, "running")
        node = self.graph.nodes[step_id]
        if result.error_code == "preview_changed":
            # Refused before it ran: what it would do changed since it was approved, so
            # a person looks at the new preview and decides again.
            self._await_approval(
                node, reason=result.error, artifacts=result.artifacts, call=self.call(step_id)
            )
            self._settle_run_status()
            return self.events[mark:]
        if not result.succeeded:
            if self._may_retry(node):
                self._step(
                    EventType.STEP_RETRIED,
                    step_id,
                    "ready",
                    reason=result.error,
                    facts=result.output,
                    usage=result,
                )
            else:
                self._step(
                    EventType.STEP_FAILED,
                    step_id,
                    "failed",
                    reason=result.error,
                    facts=result.output,
                    usage=result,
                )
                self._needs_replan(step_id)
                self._forget_call(step_id)
            return self.events[mark:]
        verdict = check_output(node.step.done_when, result.output)
        verdict_json = verdict_data(node.step.done_when, verdict, result.output)
        if not verdict.valid:
            self._step(
                EventType.STEP_INVALID,
                step_id,
                "invalid",
                facts=result.output,
                verdict=verdict_json,
                reason="; ".join(verdict.errors),
                usage=result,
            )
            self._needs_replan(step_id)
        else:
            self._step(
                EventType.STEP_SUCCEEDED,
                step_id,
                "succeeded",
                facts=result.output,
                verdict=verdict_json,
                usage=result,
            )
            self._reach(step_id)
            self._advance(self.graph.dependents(step_id))
        self._forget_call(step_id)
        return self.events[mark:]

    def is_active(self) -> bool:
        """Whether the run can progress without a person: steps ready or running."""
        if self.state.status in FINAL_RUN_STATUSES:
            return bool(self.state.count("running"))
        return bool(self.state.count("ready") or self.state.count("running"))

    def call(self, step_id: str) -> ToolBinding | None:
        """The call the step makes: its binding, with the values it takes from earlier
        steps' outputs resolved (``forge.runtime.calls``); ``None`` for an agent step.
        Raises ``UnresolvedCall`` while those steps have not succeeded, or when their
        outputs do not give a valid call."""
        node = self.graph.nodes[step_id]
        if node.binding is None or node.binding.concrete:
            return node.binding
        if self._calls_graph is not self.graph:
            self._calls = {}
            self._calls_graph = self.graph
        call = self._calls.get(step_id)
        if call is None:
            call = call_of(node, self.state)
            if call is not None:
                self._calls[step_id] = call
        return call

    def approval_hash(self, step_id: str) -> str:
        """What an approval of the step binds now (``approval_hash`` of its call).
        Raises ``TransitionRefused`` for a step whose call cannot be made yet."""
        try:
            call = self.call(step_id)
        except UnresolvedCall as unresolved:
            raise TransitionRefused(
                f"step {step_id!r} has no call to approve: {unresolved.message}"
            ) from None
        return approval_hash(self.graph.nodes[step_id], call)

    # -- people and workers ----------------------------------------------------------

    def approve(
        self,
        step_id: str,
        actor: str,
        args_hash: str,
        preview_hash: str = "",
        *,
        teams: Sequence[str] = (),
        others: Sequence[Approver] = (),
    ) -> list[RunEvent]:
        """An approval for exactly these arguments and this preview (the one the step's
        waiting event showed): the step may start. Never by the version's author
        (``GateRefused``, ``self_approval``); never a preview whose call its runner will
        refuse (``call_refused``): rejecting the step is what is left.

        ``actor`` (in ``teams``) with ``others`` (people who approved the same call and
        preview before) must satisfy the approval rules that match the step, as the gate
        judges them (``TransitionRefused``, ``rules_unsatisfied``, naming what it
        lacks); the event names them all."""
        mark = len(self.events)
        self._refuse_author(actor, f"step {step_id!r}")
        for other in others:
            self._refuse_author(other.name, f"step {step_id!r}")
        self._expect_step(step_id, "awaiting_approval")
        refusal = self.state.steps[step_id].refusal
        if refusal is not None:
            raise TransitionRefused(refused_approval(step_id, refusal), code="call_refused")
        expected = self.approval_hash(step_id)
        if args_hash != expected:
            raise TransitionRefused(
                f"approval of step {step_id!r} was given for other arguments; approve again",
                code="approval_mismatch",
            )
        if preview_hash != self.state.steps[step_id].preview_hash:
            raise TransitionRefused(
                f"approval of step {step_id!r} was given for another preview than the one it "
                "shows now; look again and approve",
                code="preview_changed",
            )
        facts: dict[str, Any] = {"preview_hash": preview_hash}
        people = (Approver(actor, tuple(teams)), *others)
        if self.gate is not None and (self.gate.rules != FOUR_EYES or others):
            approval = self.state.approval
            judgement = self.gate.step_judgement(
                self.graph.nodes[step_id],
                author="" if approval is None else str(approval["author"]),
                approvals=people,
            )
            if not judgement.satisfied:
                raise TransitionRefused(
                    f"step {step_id!r} is not approved under the approval rules: "
                    + "; ".join(judgement.lacking()),
                    code="rules_unsatisfied",
                )
            facts["approved_by"] = [person.label() for person in people]
            facts["rules"] = [rule.id for rule in judgement.rules]
        self._step(
            EventType.STEP_APPROVED,
            step_id,
            "ready",
            actor=actor,
            args_hash=expected,
            facts=facts,
        )
        self._settle_run_status()
        return self.events[mark:]

    def reject(self, step_id: str, actor: str, comment: str = "") -> list[RunEvent]:
        """A person's refusal of a waiting step: the run needs a replan. Never by the
        version's author (``self_approval``), as for an approval."""
        mark = len(self.events)
        self._refuse_author(actor, f"step {step_id!r}")
        self._expect_step(step_id, "awaiting_approval")
        reason = f"rejected by {actor}" + (f": {comment}" if comment else "")
        self._step(EventType.STEP_REJECTED, step_id, "failed", actor=actor, reason=reason)
        self._needs_replan(step_id)
        return self.events[mark:]

    def cancel(self, actor: str, reason: str = "") -> list[RunEvent]:
        """Stop admission and cancel every step that has not started."""
        mark = len(self.events)
        if self.state.status in FINAL_RUN_STATUSES:
            raise TransitionRefused(f"run is already {self.state.status}")
        for step_id in self.state.with_status("pending", "ready", "awaiting_approval"):
            self._step(EventType.STEP_CANCELLED, step_id, "cancelled", actor=actor)
        self._run_transition(EventType.RUN_CANCELLED, "cancelled", reason=reason, actor=actor)
        return self.events[mark:]

    def interrupt(self, step_id: str, reason: str = "worker lost") -> list[RunEvent]:
        """A worker died mid-step: retry what is safe to repeat, at most
        ``max_lease_retries`` times (then the step fails and the run needs a replan),
        else ask a person. The lost attempt is charged what it reserved: what it really
        used died with its worker."""
        mark = len(self.events)
        self._expect_step(step_id, "running")
        step = self.state.steps[step_id]
        lost = step.interruptions + 1
        tokens, cost = step.reserved_tokens, step.reserved_cost
        if not repeatable(self.graph.nodes[step_id]):
            self._step(
                EventType.STEP_NEEDS_RECONCILIATION,
                step_id,
                "needs_reconciliation",
                reason=f"{reason}; a non-repeatable side effect may have happened",
                tokens=tokens,
                cost=cost,
            )
            self._settle_run_status()  # with nothing else to do, the run waits for a person
        elif self.state.status in FINAL_RUN_STATUSES:
            self._step(
                EventType.STEP_FAILED,
                step_id,
                "failed",
                reason=f"{reason}; the run is {self.state.status}",
                tokens=tokens,
                cost=cost,
            )
        elif lost <= self.max_lease_retries:
            self._step(
                EventType.STEP_RETRIED,
                step_id,
                "ready",
                reason=f"{reason}; retrying ({lost} of {self.max_lease_retries})",
                facts={"interruptions": lost},
                tokens=tokens,
                cost=cost,
            )
        else:
            self._step(
                EventType.STEP_FAILED,
                step_id,
                "failed",
                reason=f"{reason}; the step lost its worker {lost} times, more than the "
                f"{self.max_lease_retries} retries allowed",
                tokens=tokens,
                cost=cost,
            )
            self._needs_replan(step_id)
        return self.events[mark:]

    def reconcile(
        self, step_id: str, succeeded: bool, output: Any, actor: str, comment: str = ""
    ) -> list[RunEvent]:
        """A person states what really happened to an interrupted step."""
        mark = len(self.events)
        self._expect_step(step_id, "needs_reconciliation")
        status: StepStatus = "succeeded" if succeeded else "failed"
        self._step(
            EventType.STEP_RECONCILED,
            step_id,
            status,
            facts=output,
            actor=actor,
            reason=comment if not succeeded else "",
        )
        if succeeded:
            self._reach(step_id)
            self._advance(self.graph.dependents(step_id))
        else:
            self._needs_replan(step_id)
        return self.events[mark:]

    def resume(
        self,
        graph: ExecutableGraph,
        plan_version: int,
        actor: str,
        approval: VersionApproval | None,
    ) -> list[RunEvent]:
        """Continue after ``needs_replan`` with a new version. Steps that succeeded, are
        unchanged and depend only on preserved steps keep their results and never run
        again; everything else starts over. Raises ``GateRefused`` (and writes nothing)
        unless the gate clears ``approval`` for ``graph``, as ``prepare`` does."""
        mark = len(self.events)
        if self.state.status not in ("needs_replan", "budget_exhausted"):
            raise TransitionRefused(
                "only a run that needs a replan or exhausted its budget can resume, "
                f"not {self.state.status}"
            )
        if self.state.count("running"):
            raise TransitionRefused(
                f"{self.state.count('running')} step(s) of the run still run; resume once "
                "they finished and their use is known"
            )
        cleared = self._clear(graph, approval, plan_version)
        preserved: list[str] = []
        kept: set[str] = set()
        for step_id in graph.order:
            old = self.graph.nodes.get(step_id)
            step = self.state.steps.get(step_id)
            node = graph.nodes[step_id]
            if (
                old is not None
                and step is not None
                and step.status == "succeeded"
                and old.fingerprint == node.fingerprint
                and all(dep in kept for dep in node.depends_on)
            ):
                kept.add(step_id)
                preserved.append(step_id)
        kept_reviews = [
            milestone.id
            for milestone in graph.document.milestones
            if milestone.review
            and self.state.reviews.get(milestone.id) == "reviewed"
            and all(step_id in kept for step_id in milestone.steps)
        ]
        facts = {
            "steps": list(graph.order),
            "preserved": preserved,
            "reviewed": kept_reviews,
            "reset": [sid for sid in graph.order if sid not in kept],
            "added": [sid for sid in graph.order if sid not in self.graph.nodes],
            "removed": [sid for sid in self.graph.order if sid not in graph.nodes],
            "from_version": self.state.plan_version,
            "approval": cleared.to_data(),
        }
        self.graph = graph
        self._record(
            EventType.RUN_RESUMED,
            plan_version=plan_version,
            transition=(self.state.status, "running"),
            facts=facts,
            actor=actor,
        )
        for milestone in graph.document.milestones:  # one whose steps were all preserved
            if milestone.review and milestone.steps:
                self._reach(milestone.steps[0])
        self._advance(graph.order)
        return self.events[mark:]

    def review_milestone(self, milestone_id: str, actor: str, comment: str = "") -> list[RunEvent]:
        """A person looked at the facts of a reached milestone and lets the run go on:
        the steps it held become ready (or wait for their own approval). Never by the
        version's author (``self_approval``)."""
        mark = len(self.events)
        self._refuse_author(actor, f"milestone {milestone_id!r}")
        if self.state.status not in ("running", "awaiting_approval"):
            raise TransitionRefused(f"run is {self.state.status}: no milestone review is due")
        status = self.state.reviews.get(milestone_id)
        if status != "awaiting":
            known = any(m.id == milestone_id for m in self.graph.document.milestones)
            raise TransitionRefused(
                f"milestone {milestone_id!r} "
                + (
                    "is not in this plan"
                    if not known
                    else "was reviewed already"
                    if status == "reviewed"
                    else "has steps that have not succeeded yet"
                ),  # fmt: skip
                code="not_found" if not known else "transition_refused",
            )
        self._record(
            EventType.MILESTONE_REVIEWED,
            facts={"milestone": milestone_id, "comment": comment},
            actor=actor,
        )
        self._advance(self.graph.order)
        return self.events[mark:]

    # -- decisions --------------------------------------------------------------------

    def note_replan(
        self,
        event_type: str,
        *,
        reason: str,
        facts: Any,
        actor: str,
        tokens: int = 0,
        cost: float = 0.0,
        model: str = "",
    ) -> list[RunEvent]:
        """Record a planner's work for this run while it needs a replan
        (``run_replan_started``, ``run_replan_proposed``, ``run_replan_failed``, or
        ``run_replan_approved`` when a person approved its version): an event that
        changes no state, so the run's history (and its page, live) says what the planner
        did, with its tokens, cost and model (not charged to the run's budget: the run's
        steps did not use them)."""
        if event_type not in _REPLAN_NOTES:
            raise ValueError(f"not a replan note: {event_type!r}")
        self._expect_run("needs_replan")
        mark = len(self.events)
        self._record(
            event_type,
            blocked_reason=reason,
            facts=facts,
            actor=actor,
            tokens=tokens,
            cost=cost,
            model=model,
        )
        return self.events[mark:]

    def _expect_run(self, *statuses: str) -> None:
        if self.state.status not in statuses:
            raise TransitionRefused(f"run is {self.state.status}, not {' or '.join(statuses)}")

    def _advance(self, candidates: Iterable[str]) -> None:
        """Move pending candidates whose dependencies all succeeded to ready (or to
        awaiting_approval), then settle the run's status."""
        if self.state.status in FINAL_RUN_STATUSES or self.state.status == "needs_replan":
            return
        steps = self.state.steps
        for step_id in candidates:
            if steps[step_id].status != "pending":
                continue
            node = self.graph.nodes[step_id]
            if self._unmet_dependencies(step_id) or self._held(step_id):
                continue
            try:
                call = self.call(step_id)
            except UnresolvedCall as unresolved:
                self._unresolved(step_id, unresolved)
                return
            if node.approval_reasons and steps[step_id].approved_hash != approval_hash(node, call):
                self._await_approval(node, reason="; ".join(node.approval_reasons), call=call)
            else:
                self._step(EventType.STEP_READY, step_id, "ready")
            steps = self.state.steps
        self._settle_run_status()

    def _milestone_tables(self) -> None:
        if self._milestones_graph is not self.graph:
            document = self.graph.document
            self._holds = dict(review_holds(document))
            self._reviewed_steps = {m.id: m.steps for m in document.milestones if m.review}
            self._milestones_graph = self.graph

    def _held(self, step_id: str) -> bool:
        """Whether an earlier milestone's review has not been given yet."""
        self._milestone_tables()
        holds = self._holds.get(step_id)
        if not holds:
            return False
        reviews = self.state.reviews
        return any(reviews.get(milestone) != "reviewed" for milestone in holds)

    def _reach(self, step_id: str) -> None:
        """Write ``milestone_reached`` when ``step_id`` completes a milestone that ends in
        a review (every step of it succeeded) and that was not reached before."""
        self._milestone_tables()
        if not self._reviewed_steps:
            return
        steps = self.state.steps
        for milestone, members in self._reviewed_steps.items():
            if step_id not in members or milestone in self.state.reviews:
                continue
            if all(steps[member].status in ("succeeded", "skipped") for member in members):
                self._record(
                    EventType.MILESTONE_REACHED,
                    blocked_reason=waiting_reason((), (), (milestone,)),
                    facts={
                        "milestone": milestone,
                        "title": next(
                            m.title for m in self.graph.document.milestones if m.id == milestone
                        ),
                        "steps": list(members),
                    },
                )

    def _unresolved(self, step_id: str, unresolved: UnresolvedCall) -> None:
        """The step's call cannot be made from its ancestors' outputs: it fails, before
        it runs or waits for anyone, and the run needs a replan."""
        self._step(
            EventType.STEP_FAILED,
            step_id,
            "failed",
            reason=f"{unresolved.message} [{unresolved.code}]",
        )
        self._needs_replan(step_id)

    def _forget_call(self, step_id: str) -> None:
        """Drop a finished step's resolved call (its arguments may be large)."""
        if self.state.steps[step_id].status not in ("ready", "running", "awaiting_approval"):
            self._calls.pop(step_id, None)

    def _await_approval(
        self,
        node: ExecutableNode,
        *,
        reason: str,
        artifacts: tuple[Any, ...] = (),
        call: ToolBinding | None = None,
    ) -> None:
        preview = None if self.previewer is None else self.previewer(node, call)
        self._step(
            EventType.STEP_AWAITING_APPROVAL,
            node.id,
            "awaiting_approval",
            reason=reason,
            args_hash=approval_hash(node, call),
            facts=None if preview is None else {"preview": preview.to_data()},
            artifacts=artifacts,
        )

    def _clear(
        self, graph: ExecutableGraph, approval: VersionApproval | None, version: int
    ) -> VersionApproval:
        if self.gate is None:
            raise GateRefused("this scheduler has no approval gate", code="not_approved")
        cleared = self.gate.clear(graph, approval, plan_id=self.plan_id, version=version)
        self._cleared = (graph, cleared.to_data())
        return cleared

    def _gate_refusal(self) -> tuple[str, str] | None:
        """Why the gate refuses the run's current graph under the approval its events
        recorded, or ``None``; checked once per graph and approval."""
        data = self.state.approval
        cleared = self._cleared
        if cleared is not None and cleared[0] is self.graph and cleared[1] == data:
            return None
        if self.gate is None:
            return "not_approved", "this scheduler has no approval gate"
        approval = None if data is None else VersionApproval.from_data(data)
        refusal = self.gate.refusal(
            self.graph, approval, plan_id=self.plan_id, version=self.state.plan_version
        )
        if refusal is None:
            self._cleared = (self.graph, data)
        return refusal

    def _settle_run_status(self) -> None:
        state = self.state
        if state.status not in ("running", "awaiting_approval"):
            return
        reviews = state.awaiting_review
        if state.count("succeeded") + state.count("skipped") == len(state.steps) and not reviews:
            self._run_transition(EventType.RUN_SUCCEEDED, "succeeded")
        elif (
            state.status == "running"
            and (state.count("awaiting_approval") or state.count("needs_reconciliation") or reviews)
            and not (state.count("ready") or state.count("running"))
        ):
            # Nothing moves without a person: an approval, a milestone review or a
            # reconciliation. The reason names each and who can act (the fold keeps it so).
            waiting = state.with_status("awaiting_approval")
            refused = [step for step in waiting if state.steps[step].refusal is not None]
            reason = waiting_reason(
                [step for step in waiting if step not in refused],
                state.with_status("needs_reconciliation"),
                reviews,
                refused,
            )
            self._run_transition(
                EventType.RUN_AWAITING_APPROVAL, "awaiting_approval", reason=reason
            )
        elif state.status == "awaiting_approval" and state.count("ready"):
            self._run_transition(EventType.RUN_CONTINUED, "running")

    def _needs_replan(self, failed_id: str) -> None:
        if self.state.status in FINAL_RUN_STATUSES or self.state.status == "needs_replan":
            return
        max_replans = self.graph.document.max_replans
        if self.state.replans >= max_replans:
            self._run_transition(
                EventType.RUN_FAILED,
                "failed",
                reason=f"step {failed_id!r} failed and the run has used all "
                f"{max_replans} replan(s)",
            )
            return
        reset = reset_steps(failed_id, self.graph.dependents)
        preserved = preserved_steps(
            ((sid, step.status) for sid, step in self.state.steps.items()), reset
        )
        self._run_transition(
            EventType.RUN_NEEDS_REPLAN,
            "needs_replan",
            reason=f"step {failed_id!r} {self.state.steps[failed_id].status}",
            facts={
                "failed_step": failed_id,
                "reset": sorted(reset),
                "preserved": preserved,
                "error": self.state.steps[failed_id].error,
            },
        )

    def _may_retry(self, node: ExecutableNode) -> bool:
        attempt = self.state.steps[node.id].attempt
        return (
            node.step.retries >= attempt
            and repeatable(node)
            and self.state.status not in FINAL_RUN_STATUSES
        )

    def _budget(self) -> WorkflowBudget:
        limits = self.graph.document.budget
        inf = float("inf")
        return WorkflowBudget(
            max_steps=inf if limits.max_steps is None else limits.max_steps,
            max_tokens=inf if limits.max_tokens is None else limits.max_tokens,
            max_cost=inf if limits.max_cost is None else limits.max_cost,
            used_steps=self.state.used_steps,
            used_tokens=self.state.used_tokens,
            used_cost=self.state.used_cost,
        )

    def _ready(self) -> list[tuple[int, str]]:
        """The heap of ready steps, rebuilt from the state when the graph changed (a new
        scheduler over a stored run, or a resume)."""
        if self._heap_graph is not self.graph:
            position = {step_id: i for i, step_id in enumerate(self.graph.order)}
            self._position = position
            self._ready_heap = [(position[sid], sid) for sid in self.state.with_status("ready")]
            heapq.heapify(self._ready_heap)
            self._heap_graph = self.graph
        return self._ready_heap

    def _refuse_author(self, actor: str, what: str) -> None:
        """Four eyes for a decision on a run's step or milestone (``forge.runtime.gate``):
        the author of the version it runs decides nothing on it."""
        approval = self.state.approval
        refuse_self_decision(actor, "" if approval is None else str(approval["author"]), what)

    def _expect_step(self, step_id: str, *statuses: StepStatus) -> None:
        step = self.state.steps.get(step_id)
        if step is None:
            raise TransitionRefused(f"run has no step {step_id!r}", code="not_found")
        if step.status not in statuses:
            raise TransitionRefused(
                f"step {step_id!r} is {step.status}, not {' or '.join(statuses)}"
            )

    # -- writing events ---------------------------------------------------------------

    def observe(self, event: RunEvent) -> None:
        """Fold in an event another scheduler of the same run wrote (another worker):
        the state and this scheduler's indexes move on together."""
        self.state = apply_event(self.state, event)
        if event.event_type == EventType.RUN_RESUMED:
            # a new version's steps: the indexes are rebuilt from the state when next used
            self._heap_graph = self._unmet_graph = self._calls_graph = None
        if event.step_id is None:
            return
        if event.step_status == "ready" and self._heap_graph is self.graph:
            heapq.heappush(self._ready_heap, (self._position[event.step_id], event.step_id))
        elif event.step_status == "succeeded" and self._unmet_graph is self.graph:
            for child in self.graph.dependents(event.step_id):
                if child in self._unmet:
                    self._unmet[child] -= 1

    def _record(self, event_type: str, *, plan_version: int | None = None, **fields: Any) -> None:
        """Write one event of this run: the run, the next seq, the plan and (unless given)
        the current version are filled in here, the one place events are made."""
        version = self.state.plan_version if plan_version is None else plan_version
        self._emit(
            RunEvent(
                run_id=self.state.run_id,
                seq=self.state.last_seq + 1,
                plan_id=self.plan_id,
                plan_version=version,
                event_type=event_type,
                **fields,
            )
        )

    def _emit(self, event: RunEvent) -> None:
        self.observe(event)
        self.events.append(event)

    def _unmet_dependencies(self, step_id: str) -> int:
        if self._unmet_graph is not self.graph:
            self._unmet = {}
            self._unmet_graph = self.graph
        count = self._unmet.get(step_id)
        if count is None:
            steps = self.state.steps
            deps = self.graph.nodes[step_id].depends_on
            count = len(unmet_dependencies(deps, lambda dep: steps[dep].status))
            self._unmet[step_id] = count
        return count

    def _step(
        self,
        event_type: str,
        step_id: str,
        to: StepStatus,
        *,
        reason: str = "",
        facts: Any = None,
        verdict: Any = None,
        actor: str = "",
        args_hash: str = "",
        tokens: int = 0,
        cost: float = 0.0,
        usage: ToolResult | None = None,
        artifacts: tuple[Any, ...] = (),
    ) -> None:
        """Write one step event; ``usage`` is the finished call whose tokens, cost, latency,
        model and artifacts the event reports (otherwise ``tokens`` and ``cost`` are a
        reservation).

        A finished call is charged what it reports using; a dimension it does not report
        (a shell command has no tokens, a built-in no cost) is charged at the step's
        estimate, which admission reserved, so unreported use can never overspend."""
        charged_tokens, charged_cost = tokens, cost
        node = self.graph.nodes.get(step_id)
        if usage is not None:
            # the estimate, not the reservation: an agent step's allowance is a ceiling,
            # and an agent reports its whole use
            estimate = node.step.estimate if node is not None else None
            charged_tokens = usage.tokens or (estimate.tokens if estimate else 0)
            charged_cost = usage.cost or (estimate.cost if estimate else 0.0)
        binding = node.binding if node is not None else None
        if binding is not None and not binding.concrete and not args_hash:
            # the resolved call's hash once it can be resolved, the same in every process
            try:
                binding = self.call(step_id)
            except UnresolvedCall:
                pass
        self._record(
            event_type,
            step_id=step_id,
            transition=(self.state.steps[step_id].status, to),
            step_status=to,
            blocked_reason=reason,
            facts=facts,
            artifacts=usage.artifacts if usage is not None else artifacts,
            verdict=verdict,
            actor=actor,
            tool_name=binding.tool.name if binding else "",
            tool_args_hash=args_hash or (binding.args_hash if binding else ""),
            permission_scope=binding.tool.permission_scope if binding else "",
            side_effect=binding.side_effect if binding else "",
            tokens=charged_tokens,
            cost=charged_cost,
            latency_ms=usage.latency_ms if usage else None,
            model=usage.model if usage else "",
        )

    def _run_transition(
        self,
        event_type: str,
        to: str,
        *,
        reason: str = "",
        facts: Any = None,
        actor: str = "",
        expect: tuple[str, ...] = (),
    ) -> None:
        if expect and self.state.status not in expect:
            raise TransitionRefused(f"run is {self.state.status}, not {' or '.join(expect)}")
        self._record(
            event_type,
            transition=(self.state.status, to),
            blocked_reason=reason,
            facts=facts,
            actor=actor,
        )
