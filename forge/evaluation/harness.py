"""Runs one case: the planner proposes, the real ``GraphCompiler`` checks, ``LocalRun``
runs under the approval gate with scripted runners, and everything is written down in a
``CaseTrace``.

The planner is asked for each version as production asks it, through
``forge.planners.proposals.propose``: an answer that is not a plan document or does not
compile goes back to it as ``Observation.feedback`` until one compiles or
``max_attempts`` answers were refused, and a planner that answers nothing (a model
error, ``planner_exhausted``) ends the attempts for that version. The evaluation wraps
the planner only to measure it: each answer's latency and what its metered model used
(``MeteredModel``), refused answers included. The evaluation
approves as ``EVALUATOR``, a person's name distinct from the planner's (the planner is
the author of every version it writes, so the gate's four eyes hold: the evaluator
approves the planner's versions and its waiting steps, never its own), with the case's
policy; a replan that drops a constraint (plan drift) is not accepted and stops the run
on its last approved version. A changed requirement arrives as a person would bring it:
the evaluator rejects the first waiting call that matches it, with the new requirement
as the comment, and the run needs a replan.
"""

from __future__ import annotations

import secrets
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from forge.compiler import CompileResult, GraphCompiler, PerformedSideEffect, ToolBinding
from forge.errors import ForgeError
from forge.evaluation.outcomes import CallLog, ScriptedRunner
from forge.evaluation.suite import Case, Suite
from forge.evaluation.trace import CaseTrace, Proposal, ReplanTrace
from forge.plan import PlanDocument
from forge.plan.drift import detect_drift
from forge.planners import Observation, PlannerPort, StructuredPlan
from forge.planners.proposals import Attempt, PlannerFailed, propose
from forge.runtime import ApprovalSigner, InMemoryRecordStore, ToolExecutor
from forge.runtime.events import EventType, RunEvent
from forge.runtime.local import LocalRun
from forge.tools import PolicyEngine, ToolRegistry, ToolSpec
from forge.tools.builtins import BUILTIN_TOOLS

__all__ = ["EVALUATOR", "Clock", "PlannerFactory", "registry_of", "run_case"]

EVALUATOR = "forge-eval (evaluator)"

PlannerFactory = Callable[[Case, Sequence[ToolSpec]], PlannerPort]
"""A fresh planner for one case, offered the suite's tools."""

Clock = Callable[[], float]


def registry_of(suite: Suite) -> ToolRegistry:
    """The catalogue the suite's plans compile against: the built-ins and its own tools."""
    return ToolRegistry((*BUILTIN_TOOLS, *suite.tools))


def run_case(
    suite: Suite, case: Case, make_planner: PlannerFactory, *, clock: Clock = time.perf_counter
) -> CaseTrace:
    """Run ``case`` of ``suite`` with a fresh planner from ``make_planner``."""
    registry = registry_of(suite)
    planner = make_planner(case, tuple(registry))
    name = str(getattr(planner, "name", "planner"))
    compiler = GraphCompiler(registry, PolicyEngine(case.policy))
    proposer = _Proposer(planner, compiler, suite.max_attempts, clock)
    started = clock()
    first, compiled, _ = proposer.propose(case.task, Observation(), 1, ())
    if compiled is None or compiled.graph is None:
        return CaseTrace(case.id, name, tuple(first), (), (), (), (), "not_compiled",
                         total_ms=(clock() - started) * 1000)  # fmt: skip
    log = CallLog()
    events: list[RunEvent] = []
    replanner = _Replanner(proposer, events, name)
    change = _ChangeOfRequirement(case)
    runner = ScriptedRunner(case.outcomes, log)
    executor = ToolExecutor(
        registry,
        compiler.policy,
        InMemoryRecordStore(),
        {spec.name: runner for spec in registry},
        approvals=ApprovalSigner(secrets.token_bytes(32)),
    )

    def on_event(event: RunEvent) -> None:
        events.append(event)
        log.events_seen = len(events)

    with tempfile.TemporaryDirectory(prefix="forge-eval-") as workspace:
        result = LocalRun(
            compiler,
            executor,
            Path(workspace),
            planner=replanner,
            approver=EVALUATOR,
            # The evaluator is the person who approves each version: a replan that uses
            # a tool new to the plan (seed 003's permission refusal) is theirs to accept.
            accept_escalation=True,
            author=name,
            on_event=on_event,
            review_step=change.review if case.change is not None else None,
            plan_id=f"eval-{case.id}",
        ).run(compiled.graph.document)
    total_ms = (clock() - started) * 1000
    state = result.state
    last = result.versions[-1] if result.versions else None
    final = compiler.compile(last).graph if last is not None else None
    return CaseTrace(
        case_id=case.id,
        planner=name,
        first=tuple(first),
        replans=tuple(draft.finish(events) for draft in replanner.drafts),
        calls=tuple(log.calls),
        events=tuple(events),
        versions=result.versions,
        status=result.status,
        stop_reason=result.stop_reason,
        deliverable=final.deliverable if final is not None else None,
        step_status=tuple((sid, step.status) for sid, step in state.steps.items())
        if state is not None
        else (),
        change_delivered=change.delivered if case.change is not None else None,
        run_tokens=state.used_tokens if state is not None else 0,
        run_cost=state.used_cost if state is not None else 0.0,
        total_ms=total_ms,
    )


@dataclass
class _Call:
    """One ``plan`` call of the planner, as the evaluation measures it: how long it took,
    what the meter moved (None: the planner has no metered model), and its answer, the
    compile result of that answer, or the error it raised instead."""

    latency_ms: float
    metered: tuple[int, float] | None
    plan: StructuredPlan | None = None
    error: ForgeError | None = None
    compiled: CompileResult | None = None


class _Stopwatch:
    """The planner as ``propose`` sees it, each ``plan`` call timed and metered."""

    def __init__(self, planner: PlannerPort, clock: Clock) -> None:
        self.planner, self.clock = planner, clock
        self.calls: list[_Call] = []

    def plan(self, task: str, observation: Observation) -> StructuredPlan:
        started, before = self.clock(), self._meter()
        try:
            answer = self.planner.plan(task, observation)
        except ForgeError as error:
            self.calls.append(_Call(self._ms(started), self._moved(before), error=error))
            raise
        self.calls.append(_Call(self._ms(started), self._moved(before), plan=answer))
        return answer

    def _ms(self, started: float) -> float:
        return (self.clock() - started) * 1000

    def _meter(self) -> tuple[int, float] | None:
        """What the planner's metered model used so far (``MeteredModel``), if it has one."""
        model = getattr(self.planner, "model", None)
        if model is None or not hasattr(model, "tokens"):
            return None
        return int(model.tokens), float(model.cost)

    def _moved(self, before: tuple[int, float] | None) -> tuple[int, float] | None:
        after = self._meter()
        if before is None or after is None:
            return None
        return after[0] - before[0], after[1] - before[1]


class _Proposer:
    """Asks the planner for one version through ``forge.planners.proposals.propose``, as
    the web and the workers do, and records each answer as a ``Proposal``."""

    def __init__(
        self, planner: PlannerPort, compiler: GraphCompiler, attempts: int, clock: Clock
    ) -> None:
        self.planner, self.compiler, self.attempts, self.clock = planner, compiler, attempts, clock

    def propose(
        self,
        task: str,
        observation: Observation,
        version: int,
        performed: Iterable[PerformedSideEffect],
    ) -> tuple[list[Proposal], CompileResult | None, StructuredPlan | None]:
        """Every answer, the compile result and plan of the last answer that was a plan
        document (None: the planner gave none)."""
        performed = tuple(performed)
        watch = _Stopwatch(self.planner, self.clock)

        def compile(document: PlanDocument) -> CompileResult:
            result = self.compiler.compile(document, performed)
            watch.calls[-1].compiled = result
            return result

        failure: PlannerFailed | None = None
        try:
            attempts = propose(watch, task, observation, compile, self.attempts).attempts
        except PlannerFailed as failed:
            attempts, failure = failed.attempts, failed
        answers = [
            _proposal(version, attempt.number, attempt, call)
            for attempt, call in zip(attempts, watch.calls, strict=False)
        ]
        if failure is not None:  # the planner answered nothing: its error is the answer
            call = watch.calls[len(attempts)]
            error = call.error or failure
            tokens, cost = call.metered or (0, 0.0)
            answers.append(
                Proposal(version, len(attempts) + 1, False, (f"{error.code}: {error}",),
                         tokens=tokens, cost=cost, latency_ms=call.latency_ms)
            )  # fmt: skip
        last = next((call for call in reversed(watch.calls) if call.plan is not None), None)
        if last is None:
            return answers, None, None
        return answers, last.compiled, last.plan


def _proposal(version: int, number: int, attempt: Attempt, call: _Call) -> Proposal:
    """The record of one attempt: what the meter moved (else what the answer reported),
    the time the planner took, and each problem as ``code: message``."""
    tokens, cost = call.metered or (attempt.tokens, attempt.cost)
    if call.error is not None:  # not a plan document (``PlannerOutputInvalid``)
        return Proposal(version, number, False, (f"{call.error.code}: {call.error}",),
                        tokens=tokens, cost=cost, latency_ms=call.latency_ms)  # fmt: skip
    assert call.plan is not None and call.compiled is not None  # propose compiles each plan
    compiled = call.compiled
    return Proposal(
        version,
        number,
        compiled.ok,
        tuple(f"{d.code}: {d.message}" for d in compiled.errors),
        tuple(d.code for d in compiled.diagnostics if d.severity == "warning"),
        tokens,
        cost,
        call.latency_ms,
        attempt.model,
        call.plan.document,
    )


@dataclass
class _ReplanDraft:
    version: int
    observation: Observation
    failed_call: tuple[str, str] | None
    rejected: bool
    proposals: list[Proposal]
    compiled: CompileResult | None

    def finish(self, events: Sequence[RunEvent]) -> ReplanTrace:
        resumed = [
            e for e in events
            if e.event_type == EventType.RUN_RESUMED and e.plan_version == self.version
        ]  # fmt: skip
        graph = self.compiled.graph if self.compiled is not None else None
        current = self.observation.current
        preserved = tuple(_facts(resumed[0]).get("preserved", ())) if resumed else ()
        return ReplanTrace(
            version=self.version,
            failed_step=self.observation.failed_step or "",
            error=self.observation.error,
            rejected=self.rejected,
            failed_call=self.failed_call,
            completed=tuple(self.observation.completed),
            performed=tuple((e.tool, e.args_hash) for e in self.observation.performed_side_effects),
            proposals=tuple(self.proposals),
            drift=detect_drift(current, graph.document) if graph and current else (),
            # the compiler also names a preserved step as repeating its own call: it is
            # kept, not run again, so only the others count
            repeats=tuple(
                d.message
                for d in (self.compiled.diagnostics if self.compiled is not None else ())
                if d.code == "repeats_side_effect" and not set(d.nodes) <= set(preserved)
            ),
            resumed=bool(resumed),
            preserved=preserved,
        )


def _facts(event: RunEvent) -> Mapping[str, Any]:
    return event.facts if isinstance(event.facts, Mapping) else {}


@dataclass
class _Replanner:
    """The planner ``LocalRun`` asks for replans: the proposer, with each replan noted."""

    proposer: _Proposer
    events: list[RunEvent]
    name: str
    drafts: list[_ReplanDraft] = field(default_factory=list)

    def plan(self, task: str, observation: Observation) -> StructuredPlan:
        version = (observation.current_version or 0) + 1
        failed = observation.failed_step
        last = next((e for e in reversed(self.events) if e.step_id == failed), None)
        with_call = next(
            (e for e in reversed(self.events) if e.step_id == failed and e.tool_args_hash), None
        )
        proposals, compiled, plan = self.proposer.propose(
            task, observation, version, observation.performed_side_effects
        )
        self.drafts.append(
            _ReplanDraft(
                version,
                observation,
                (with_call.tool_name, with_call.tool_args_hash) if with_call else None,
                last is not None and last.event_type == EventType.STEP_REJECTED,
                proposals,
                compiled,
            )
        )
        if plan is None:
            raise ForgeError(
                "; ".join(proposals[-1].errors) if proposals else "the planner gave no plan",
                code="replan_failed",
            )
        return replace(plan, planner=self.name)


class _ChangeOfRequirement:
    """The person of the case who changes the requirement, once."""

    def __init__(self, case: Case) -> None:
        self.change = case.change
        self.delivered = False

    def review(
        self, step_id: str, call: ToolBinding | None, preview: Mapping[str, Any] | None
    ) -> str | None:
        if self.change is None or self.delivered or call is None:
            return None
        if not self.change.at.matches(call.tool.name, call.args):
            return None
        self.delivered = True
        return f"the requirement changed: {self.change.requirement}"
