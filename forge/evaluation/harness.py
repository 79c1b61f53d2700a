"""Runs one case: the planner proposes, the real ``GraphCompiler`` checks, ``LocalRun``
runs under the approval gate with scripted runners, and everything is written down in a
``CaseTrace``.

The planner's answer for a version goes back to it with the compiler's errors until one
compiles or ``max_attempts`` answers were refused (``retry_task``). The evaluation
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
from forge.plan.drift import detect_drift
from forge.planners import Observation, PlannerPort, StructuredPlan
from forge.runtime import ApprovalSigner, InMemoryRecordStore, ToolExecutor
from forge.runtime.events import EventType, RunEvent
from forge.runtime.local import LocalRun
from forge.tools import PolicyEngine, ToolRegistry, ToolSpec
from forge.tools.builtins import BUILTIN_TOOLS

__all__ = ["EVALUATOR", "Clock", "PlannerFactory", "registry_of", "retry_task", "run_case"]

EVALUATOR = "forge-eval (evaluator)"

PlannerFactory = Callable[[Case, Sequence[ToolSpec]], PlannerPort]
"""A fresh planner for one case, offered the suite's tools."""

Clock = Callable[[], float]


def registry_of(suite: Suite) -> ToolRegistry:
    """The catalogue the suite's plans compile against: the built-ins and its own tools."""
    return ToolRegistry((*BUILTIN_TOOLS, *suite.tools))


def retry_task(task: str, problems: Sequence[str]) -> str:
    """What a planner is asked after its answer was refused: the task and every problem.
    (One place: a planner port that carries feedback itself can replace it.)"""
    lines = "\n".join(f"- {problem}" for problem in problems)
    return (
        f"{task}\n\nYour previous answer was refused. Answer with the whole plan again, "
        f"fixing every problem:\n{lines}"
    )


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


class _Proposer:
    """Asks the planner for one version until an answer compiles, at most ``attempts``."""

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
        """Every answer, the compile result and plan of the last one (None: the planner
        gave no document at all)."""
        performed = tuple(performed)
        answers: list[Proposal] = []
        asked = task
        compiled: CompileResult | None = None
        plan: StructuredPlan | None = None
        for attempt in range(1, self.attempts + 1):
            started, metered = self.clock(), self._meter()
            try:
                answer = self.planner.plan(asked, observation)
            except ForgeError as exc:
                ms = (self.clock() - started) * 1000
                tokens, cost = self._used(metered, 0, 0.0)
                answers.append(Proposal(version, attempt, False, (f"{exc.code}: {exc}",),
                                        tokens=tokens, cost=cost, latency_ms=ms))  # fmt: skip
                if exc.code == "planner_exhausted":
                    break  # it has nothing more to say
                asked = retry_task(task, [f"{exc.code}: {exc}"])
                continue
            ms = (self.clock() - started) * 1000
            plan, compiled = answer, self.compiler.compile(answer.document, performed)
            errors = tuple(f"{d.code}: {d.message}" for d in compiled.errors)
            warnings = tuple(d.code for d in compiled.diagnostics if d.severity == "warning")
            tokens, cost = self._used(metered, answer.tokens, answer.cost)
            answers.append(
                Proposal(version, attempt, compiled.ok, errors, warnings, tokens, cost, ms,
                         answer.model, answer.document)
            )  # fmt: skip
            if compiled.ok:
                break
            asked = retry_task(task, list(errors))
        return answers, compiled, plan

    def _meter(self) -> tuple[int, float] | None:
        """What the planner's metered model used so far (``MeteredModel``), if it has one."""
        model = getattr(self.planner, "model", None)
        if model is None or not hasattr(model, "tokens"):
            return None
        return int(model.tokens), float(model.cost)

    def _used(
        self, before: tuple[int, float] | None, tokens: int, cost: float
    ) -> tuple[int, float]:
        """An answer's use: what the meter moved since ``before``, else what it reported."""
        after = self._meter()
        if before is None or after is None:
            return tokens, cost
        return after[0] - before[0], after[1] - before[1]


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
