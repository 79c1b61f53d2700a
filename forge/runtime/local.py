"""A run in this process: the same compiler, gate, scheduler and ToolExecutor the workers
use, driven step by step, for ``forge run`` and for tests.

Steps run one at a time in topological order. Nothing runs before the version passes the
approval gate, as on the web: ``approver`` approves it in a person's name (never the
``author``'s), and without one the run stops before it starts, waiting for a person.
When the run needs a replan and a planner is given, the planner's proposal is compiled
(with the side effects already performed) and must pass the gate too: the deployment
policy may continue a read-only replan that drops no constraint (``auto_approve_replans:
read_only``); otherwise ``approver`` approves it, except plan drift, which keeps the run
on its last approved version until ``accept_drift`` says a person accepts it, and
escalation (a replan that adds a tool, a permission scope, a side-effect class or a
host), which waits likewise until ``accept_escalation``. Under approval ``rules`` every
person of ``approvers`` (each with their teams) approves together, each approval
reported, and the gate judges whether they satisfy the rules that match each version and
each waiting step. Steps waiting for approval are approved by ``approver`` with their
preview, unless ``review_step`` (asked first, with the step's call and preview) answers
with a comment: then ``approver`` rejects the step with it, as a person who changed the
requirement does, and the run needs a replan. A step whose preview says its call will be
refused (a host off the allow list) cannot be approved: once nothing else can move, the
run stops there, waiting, with why in ``stop_reason``. A milestone that ends in a review
is reviewed in ``approver``'s name with the facts of its steps. Every approval is
reported to ``on_approval``, so whoever runs this sees what was approved in their name.
A planner that fails (out of versions, model unreachable, invalid output) leaves the run
in ``needs_replan`` with the reason in ``stop_reason``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from forge.compiler import CompileResult, Diagnostic, ExecutableGraph, GraphCompiler, ToolBinding
from forge.errors import ForgeError
from forge.plan import PlanDocument
from forge.plan.drift import detect_drift
from forge.planners import PlannerPort
from forge.rules import FOUR_EYES, Approver, RuleSet
from forge.runtime.agent_port import AgentPort, agent_grant
from forge.runtime.approvals import ApprovalSigner, ApprovalToken
from forge.runtime.dispatch import StepDispatcher, step_context
from forge.runtime.events import RunEvent
from forge.runtime.executor import ToolExecutor
from forge.runtime.gate import ApprovalGate, GateRefused, VersionApproval, escalations
from forge.runtime.previews import step_previewer
from forge.runtime.replans import performed_side_effects, replan_observation
from forge.runtime.results import ToolResult
from forge.runtime.scheduler import Scheduler, TransitionRefused, refused_approval
from forge.runtime.state import RunState
from forge.tools import WRITE_CLASSES

__all__ = [
    "AgentPort",
    "ApprovalNotice",
    "LocalRun",
    "LocalRunResult",
    "StepReview",
    "performed_side_effects",
]


@dataclass(frozen=True)
class ApprovalNotice:
    """An approval given in someone's name: what, by whom, and what it lets happen."""

    kind: Literal["version", "step", "milestone"]
    approver: str
    subject: str  # "version 2", "step publish", "milestone gather"
    details: str  # several lines: hashes, drift, side effects, the step's preview


StepReview = Callable[[str, ToolBinding | None, Mapping[str, Any] | None], str | None]
"""``(step_id, its call, its preview) -> None`` to approve it, or the rejection's comment."""


@dataclass(frozen=True)
class LocalRunResult:
    status: str  # a run status, "not_compiled", or "not_approved" (nothing started)
    diagnostics: tuple[Diagnostic, ...]
    state: RunState | None
    events: tuple[RunEvent, ...]
    versions: tuple[PlanDocument, ...]
    stop_reason: str = ""
    # "version": a version waits for a person's approval (the run did not start, or a
    # replan did not continue); "step": steps wait; "" otherwise.
    waiting_for: str = ""

    def preview_of(self, step_id: str) -> Mapping[str, Any] | None:
        """The preview the step's latest wait for approval showed."""
        return _latest_preview(self.events, step_id)


@dataclass
class LocalRun:
    compiler: GraphCompiler
    executor: ToolExecutor
    workspace: Path
    planner: PlannerPort | None = None
    agent: AgentPort | None = None
    approver: str | None = None  # approves versions and waiting steps in this name
    # Everyone who approves, with their teams (``approver`` is the first of them); given
    # only ``approver``, that one person in no team.
    approvers: tuple[Approver, ...] = ()
    rules: RuleSet = FOUR_EYES
    accept_escalation: bool = False  # the approvers also accept replans that escalate
    author: str = "the plan's author"  # who wrote the first version
    accept_drift: bool = False  # the approver also accepts replans that drop a constraint
    signer: ApprovalSigner | None = None  # defaults to the executor's
    on_event: Callable[[RunEvent], None] | None = None
    on_approval: Callable[[ApprovalNotice], None] | None = None
    # Asked before ``approver`` approves a waiting step: ``None`` approves, a comment rejects.
    review_step: StepReview | None = None
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    plan_id: str = "local"
    max_concurrency: int = 1  # one at a time: a failure stops everything after it
    _flushed: int = field(default=0, init=False, repr=False)

    def __post_init__(self) -> None:
        signer = self.signer or self.executor.approvals
        if signer is None:
            raise ValueError("a local run needs an approval signer (the executor's, or its own)")
        self.signer = signer
        if not self.approvers and self.approver is not None:
            self.approvers = (Approver(self.approver),)
        elif self.approvers and self.approver is None:
            self.approver = self.approvers[0].name
        self.gate = ApprovalGate(signer, self.rules)
        self._dispatcher = StepDispatcher(self.executor, self.agent, "pass --model")

    def run(
        self, document: PlanDocument, approval: VersionApproval | None = None
    ) -> LocalRunResult:
        """Run ``document`` as version 1, under ``approval`` when one was given before
        (the gate still clears it), else under ``approver``'s."""
        compiled = self.compiler.compile(document)
        if compiled.graph is None:
            return LocalRunResult("not_compiled", compiled.diagnostics, None, (), (document,))
        versions = [document]
        cleared = self._first_approval(compiled.graph, approval)
        if isinstance(cleared, str):
            return LocalRunResult(
                "not_approved", compiled.diagnostics, None, (), (document,), cleared, "version"
            )
        approval = cleared
        scheduler = Scheduler(
            compiled.graph,
            self.run_id,
            plan_id=self.plan_id,
            max_concurrency=self.max_concurrency,
            gate=self.gate,
            previewer=step_previewer(self.executor, self.run_id, lambda: self.workspace),
        )
        tokens: dict[str, ApprovalToken] = {}
        scheduler.prepare(approval)
        self._flush(scheduler)
        stop_reason = waiting_for = ""
        while True:
            admitted = scheduler.get_ready()
            self._flush(scheduler)
            for step_id in admitted:
                result = self._execute(scheduler, step_id, tokens.get(step_id))
                scheduler.done(step_id, result)
                self._flush(scheduler)
            if admitted:
                continue
            status = scheduler.state.status
            state = scheduler.state
            if status == "awaiting_approval" and not (
                state.count("awaiting_approval") or state.awaiting_review
            ):
                break  # it waits for what no approver gives: an operator's reconciliation
            if status == "awaiting_approval" and self.approver is not None:
                mark = len(scheduler.events)
                try:
                    refused = self._approve_steps(scheduler, tokens)
                except GateRefused as four_eyes:  # four eyes: the scheduler's own rule
                    stop_reason = str(four_eyes)
                    break
                except TransitionRefused as wanting:  # the rules want more people
                    if wanting.code != "rules_unsatisfied":
                        raise
                    stop_reason = str(wanting)
                    break
                if refused and len(scheduler.events) == mark:
                    stop_reason = "; ".join(refused)  # nothing else can move
                    break
                continue
            if status == "needs_replan" and self.planner is not None:
                replanned = self._replan(scheduler, versions)
                if isinstance(replanned, tuple):
                    stop_reason, waiting_for = replanned
                    break
                compiled = replanned
                continue
            break
        if scheduler.state.status == "awaiting_approval" and not waiting_for:
            waiting_for = "step"
        return LocalRunResult(
            scheduler.state.status,
            compiled.diagnostics,
            scheduler.state,
            tuple(scheduler.events),
            tuple(versions),
            stop_reason,
            waiting_for,
        )

    # -- the gate ---------------------------------------------------------------------

    def _first_approval(
        self, graph: ExecutableGraph, given: VersionApproval | None
    ) -> VersionApproval | str:
        if given is None:
            return self._approve_version(graph, 1, self.author, parent=None)
        try:
            return self.gate.clear(graph, given, plan_id=self.plan_id, version=1)
        except GateRefused as refused:
            return str(refused)

    def _approve_version(
        self, graph: ExecutableGraph, number: int, author: str, parent: ExecutableGraph | None
    ) -> VersionApproval | str:
        """The approval version ``number`` runs under, or why there is none (a person
        must decide)."""
        drift = () if parent is None else detect_drift(parent.document, graph.document)
        if drift and not (self.approver and self.accept_drift):
            return (
                f"plan drift: version {number} " + "; ".join(drift) + f". The run stays on "
                f"version {number - 1}, the last approved one, until a person approves "
                f"version {number} (--approve-as NAME --accept-drift)"
            )
        if parent is not None and not drift:
            try:
                approval = self.gate.approve_by_policy(
                    self.compiler.policy.policy,
                    parent,
                    graph,
                    plan_id=self.plan_id,
                    version=number,
                    author=author,
                )
            except GateRefused as refused:
                if self.approver is None:
                    return f"{refused} (--approve-as NAME)"
            else:
                self._notify("version", approval.approver, f"version {number}", graph, drift)
                return approval
        if self.approver is None:
            return f"version {number} is not approved: a person must approve it (--approve-as NAME)"
        escalated = () if parent is None else escalations(parent, graph)
        if escalated and not self.accept_escalation:
            return (
                f"escalation: version {number} " + "; ".join(escalated) + f". The run stays "
                f"on version {number - 1}, the last approved one, until a person accepts it "
                "(--approve-as NAME --accept-escalation)"
            )
        approvals = []
        try:
            for person in self.approvers:
                approvals.append(
                    self.gate.approve(
                        plan_id=self.plan_id,
                        version=number,
                        content_hash=graph.content_hash,
                        author=author,
                        approver=person.name,
                        teams=person.teams,
                    )
                )
            approval = approvals[0].with_others(approvals[1:])
            self.gate.clear(graph, approval, plan_id=self.plan_id, version=number)
        except GateRefused as refused:
            return str(refused)
        for person in self.approvers:
            self._notify("version", person.label(), f"version {number}", graph, drift)
        return approval

    def _notify(
        self,
        kind: Literal["version", "step"],
        approver: str,
        subject: str,
        graph: ExecutableGraph,
        drift: tuple[str, ...],
    ) -> None:
        if self.on_approval is None:
            return
        lines = [f"content sha256:{graph.content_hash}", f"{len(graph.order)} step(s)"]
        lines += [f"drift accepted: {item}" for item in drift]
        for step_id in graph.order:
            node = graph.nodes[step_id]
            if node.binding is not None and node.binding.side_effect in WRITE_CLASSES:
                lines.append(f"{step_id}: {node.binding.tool.name} ({node.binding.side_effect})")
            if node.approval_reasons:
                lines.append(
                    f"{step_id} will wait for approval: {'; '.join(node.approval_reasons)}"
                )
        self.on_approval(ApprovalNotice(kind, approver, subject, "\n".join(lines)))

    def _approve_steps(self, scheduler: Scheduler, tokens: dict[str, ApprovalToken]) -> list[str]:
        """Approve every waiting step and review every reached milestone in
        ``approver``'s name; returns why the steps that cannot be approved (their calls
        will be refused) were not."""
        assert self.approver is not None and self.signer is not None
        refused: list[str] = []
        for step_id in scheduler.state.with_status("awaiting_approval"):
            if self._rejected(scheduler, step_id):
                return refused
            refusal = scheduler.state.steps[step_id].refusal
            if refusal is not None:
                refused.append(refused_approval(step_id, refusal))
                continue
            args_hash = scheduler.approval_hash(step_id)
            preview_hash = scheduler.state.steps[step_id].preview_hash
            tokens[step_id] = self.signer.issue(
                self.run_id, step_id, args_hash, self.approver, preview_hash
            )
            first, *others = self.approvers
            scheduler.approve(
                step_id, first.name, args_hash, preview_hash, teams=first.teams, others=others
            )
            if self.on_approval is not None:
                preview = _latest_preview(scheduler.events, step_id) or {}
                text = str(preview.get("text", ""))
                for person in self.approvers:
                    self.on_approval(
                        ApprovalNotice("step", person.label(), f"step {step_id}", text)
                    )
            self._flush(scheduler)
        for milestone in scheduler.state.awaiting_review:
            if scheduler.state.status not in ("running", "awaiting_approval"):
                break  # a step was rejected: the run needs a replan first
            scheduler.review_milestone(milestone, self.approver, "reviewed with forge run")
            if self.on_approval is not None:
                facts = _milestone_facts(scheduler, milestone)
                self.on_approval(
                    ApprovalNotice("milestone", self.approver, f"milestone {milestone}", facts)
                )
            self._flush(scheduler)
        return refused

    def _rejected(self, scheduler: Scheduler, step_id: str) -> bool:
        """Whether ``review_step`` answered for the step with a comment, which rejects it."""
        if self.review_step is None:
            return False
        comment = self.review_step(
            step_id, scheduler.call(step_id), _latest_preview(scheduler.events, step_id)
        )
        if comment is None:
            return False
        assert self.approver is not None
        scheduler.reject(step_id, self.approver, comment)
        self._flush(scheduler)
        return True

    # -- running and replanning ---------------------------------------------------------

    def _execute(
        self, scheduler: Scheduler, step_id: str, token: ApprovalToken | None
    ) -> ToolResult:
        node, state = scheduler.graph.nodes[step_id], scheduler.state
        context = step_context(self.run_id, node, self.workspace, state.steps[step_id].attempt)
        return self._dispatcher.dispatch(
            node,
            context,
            call=scheduler.call(step_id),
            token=token,
            approval_scopes=scheduler.graph.document.requires_approval_before,
            inputs={dep: state.steps[dep].output for dep in node.depends_on},
            grant=None if node.binding else agent_grant(scheduler.graph, state, step_id, token),
        )

    def _replan(
        self, scheduler: Scheduler, versions: list[PlanDocument]
    ) -> CompileResult | tuple[str, str]:
        """The next version, compiled and resumed on; or why the run stops (and whether
        it waits for a person's approval of a version)."""
        assert self.planner is not None
        observation = replan_observation(scheduler.graph, scheduler.state)
        try:
            proposal = self.planner.plan(scheduler.graph.document.goal, observation)
        except ForgeError as exc:  # exhausted, unreachable model, invalid plan output
            return f"{exc} [{exc.code}]", ""
        compiled = self.compiler.compile(proposal.document, observation.performed_side_effects)
        if compiled.graph is None:
            errors = "; ".join(d.message for d in compiled.diagnostics if d.severity == "error")
            return f"the replanned version does not compile: {errors}", ""
        versions.append(proposal.document)
        author = getattr(self.planner, "name", "planner")
        approval = self._approve_version(
            compiled.graph, len(versions), author, parent=scheduler.graph
        )
        if isinstance(approval, str):
            return approval, "version"
        scheduler.resume(compiled.graph, len(versions), author, approval)
        self._flush(scheduler)
        return compiled

    def _flush(self, scheduler: Scheduler) -> None:
        """Hand every event the scheduler wrote since the last flush to ``on_event``."""
        if self.on_event is not None:
            for event in scheduler.events[self._flushed :]:
                self.on_event(event)
        self._flushed = len(scheduler.events)


def _latest_preview(events: Sequence[RunEvent], step_id: str) -> Mapping[str, Any] | None:
    for event in reversed(events):
        if event.step_id == step_id and event.event_type == "step_awaiting_approval":
            preview = event.facts.get("preview") if isinstance(event.facts, Mapping) else None
            return preview if isinstance(preview, Mapping) else None
    return None


def _milestone_facts(scheduler: Scheduler, milestone_id: str) -> str:
    """The facts of a reached milestone's steps, a line each, for the person in whose
    name it is reviewed."""
    steps = next(m.steps for m in scheduler.graph.document.milestones if m.id == milestone_id)
    lines = []
    for step_id in steps:
        output = json.dumps(scheduler.state.steps[step_id].output, ensure_ascii=False, default=str)
        lines.append(f"{step_id}: {output[:200]}")
    return "\n".join(lines)
