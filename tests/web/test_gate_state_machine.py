"""The gate's invariant under everything people and workers do, in any order (Hypothesis):
no call reaches a runner unless a person other than the version's author approved
exactly the content that call came from.

The machine edits versions (one author may also be an approver), asks the planner for
plans (``plans.generation``: the asker's drafts, submitted or not), lets runs of
``replan: auto`` plans replan on the worker and resume when a person approves the
planner's version, approves, rejects, self-approves and forges approvals around the
services, tampers with stored documents, starts, cancels and resumes runs, writes
replans, lets steps fail (a contract or a failing tool), lets workers crash mid-step and
restarts them (a fresh process compiles what the database holds now), and reconciles
what crashed. The runners are wrapped: at each call, the oracle below checks the call
against what the model knows was approved, independently of the gate's own code.
"""

from __future__ import annotations

import copy
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import Http404
from django.utils import timezone
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from forge.errors import ForgeError
from forge.plan import content_hash, from_data
from forge.runners import builtin_runners
from forge.runtime import ToolExecutor
from forge.tools import PolicyEngine
from plans import compilation, generation, planning
from plans import services as plans
from plans.gate import approval_signer, gate
from plans.models import Approval, PlanVersion
from runs import engine, execution, worker
from runs import services as runs
from runs.engine import locked_run
from runs.models import Run, StepRun
from tests.examples import examples

from .runs_helpers import drain

EXPECTED = (ForgeError, PermissionDenied, Http404, RuntimeError)


def plan_document(risk: int, gated: bool, failing: bool, auto: bool = False) -> dict[str, Any]:
    score: dict[str, Any] = {"id": "score", "description": "Score the supplier risk",
                             "tool": "echo", "args": {"risk": risk}, "depends_on": ["inspect"],
                             "done_when": {"checks": ["risk <= `5`"]}}  # fmt: skip
    if failing:
        score = {**score, "tool": "fail", "args": {"message": "the scoring service is down"}}
        del score["done_when"]
    return {
        "goal": "Prepare the supplier risk report",
        **({"replan": "auto"} if auto else {}),
        "requires_approval_before": ["file_write"] if gated else [],
        "steps": [
            {"id": "inspect", "description": "Collect the contract facts", "tool": "echo",
             "args": {"facts": ["a"]}},
            score,
            {"id": "notify", "description": "Touch the release marker", "tool": "shell",
             "args": {"argv": ["true"]}, "depends_on": ["score"]},
            {"id": "publish", "description": "Write the risk report", "tool": "file_write",
             "args": {"path": "report.md", "content": f"risk {risk}"},
             "depends_on": ["notify"]},
        ],
    }  # fmt: skip


class Oracle:
    """Every document a person other than its author approved, per version, as the model
    knows it; and every runner call checked against them.

    A run executes under the approval it started (or resumed) with: a later decision on
    the same version (a rejection, a forged row) refuses new starts and resumes, and
    leaves a run already under way alone (people cancel runs)."""

    def __init__(self) -> None:
        self.approved: dict[int, list[dict[str, Any]]] = {}  # version pk -> approved docs
        self.calls: list[tuple[str, str]] = []
        self.violations: list[str] = []

    def approve(self, version_pk: int, document: dict[str, Any], approver: Any = None) -> None:
        if approver is not None and PlanVersion.objects.get(pk=version_pk).author_id == approver.pk:
            self.violations.append(f"version {version_pk} was approved by its own author")
        self.approved.setdefault(version_pk, []).append(copy.deepcopy(document))

    def check(self, tool: str, args: Any, run_id: str, step_id: str) -> None:
        self.calls.append((run_id, step_id))
        run = Run.objects.get(pk=int(run_id))
        for approved in self.approved.get(run.version_id, []):
            step = next((s for s in approved["steps"] if s["id"] == step_id), None)
            if step is not None and (step.get("tool"), step.get("args", {})) == (tool, dict(args)):
                return
        self.violations.append(f"run {run_id} ran {step_id} as {tool} {dict(args)}: not approved")


class Checked:
    def __init__(self, inner: Any, oracle: Oracle) -> None:
        self.inner, self.oracle = inner, oracle

    def run(self, tool: Any, args: Any, context: Any) -> Any:
        self.oracle.check(tool.name, args, context.run_id, context.step_id)
        return self.inner.run(tool, args, context)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class MachinePlanner:
    """Proposes a fix for any task: risk 3, gated or not by turns, always replan: auto."""

    name = "scripted:machine"
    turn = 0

    def plan(self, task: str, observation: Any) -> Any:
        from forge.planners import StructuredPlan

        MachinePlanner.turn += 1
        document = from_data(plan_document(3, MachinePlanner.turn % 2 == 0, False, True))
        return StructuredPlan(document, observation.current_version, "the fix", self.name)


class GateMachine(RuleBasedStateMachine):
    def __init__(self, people: dict[str, Any], oracle: Oracle, workspaces: Path) -> None:
        super().__init__()
        self.people, self.oracle = people, oracle
        oracle.approved.clear()
        oracle.calls.clear()
        oracle.violations.clear()
        self.savepoint = transaction.savepoint_create()
        engine._SCHEDULERS.clear()
        engine._GRAPHS.clear()
        self.versions: list[int] = []
        self.runs: list[int] = []
        django_settings.FORGE_WORKSPACES = str(workspaces / f"example-{id(self)}")
        self.plan = None

    def teardown(self) -> None:
        transaction.savepoint_rollback(self.savepoint)
        engine._SCHEDULERS.clear()
        engine._GRAPHS.clear()

    # -- versions ----------------------------------------------------------------------

    @initialize(
        risk=st.integers(0, 9),
        gated=st.booleans(),
        failing=st.booleans(),
        auto=st.booleans(),
        story=st.sampled_from(["draft", "approved", "running", "running", "running"]),
    )
    def first_version(self, risk: int, gated: bool, failing: bool, auto: bool, story: str) -> None:
        """Most stories start from an approved plan with a run under way; with ``auto``
        its runs ask the planner for each replan, on the worker."""
        version = plans.create_plan(
            self.people["author"], "Supplier risk",
            from_data(plan_document(risk, gated, failing, auto)),
        )  # fmt: skip
        self.plan = version.plan
        self.versions.append(version.pk)
        if story != "draft":
            plans.approve(version, self.people["approver"], "looks right")
            self.oracle.approve(version.pk, version.document)
        if story == "running":
            self.runs.append(runs.start_run(version, self.people["operator"]).pk)

    @rule(
        by=st.sampled_from(["author", "ada"]),
        risk=st.integers(0, 9),
        gated=st.booleans(),
        failing=st.booleans(),
    )
    def edit(self, by: str, risk: int, gated: bool, failing: bool) -> None:
        document = from_data(plan_document(risk, gated, failing))
        version = plans.create_version(self.plan, self.people[by], document)
        self.versions.append(version.pk)

    @rule(by=st.sampled_from(["author", "ada"]), submit=st.booleans())
    def generate(self, by: str, submit: bool) -> None:
        """A person asks the planner for a plan (POST /plans/generate, then the worker's
        task): version 1 of a new plan, their draft, which they may submit for review."""
        try:
            proposal = generation.start(self.people[by], "Prepare the report")
            generation.answer(proposal.pk)
        except EXPECTED:
            return
        proposal.refresh_from_db()
        assert proposal.version is not None and proposal.version.status == "draft"
        self.versions.append(proposal.version.pk)
        if submit:
            plans.submit_version(proposal.version, self.people[by])

    @rule(data=st.data(), by=st.sampled_from(["approver", "ada"]))
    def approve(self, data: st.DataObject, by: str) -> None:
        version = self._version(data)
        try:
            plans.approve(version, self.people[by], "looks right")
        except EXPECTED:
            return
        self.oracle.approve(
            version.pk, PlanVersion.objects.get(pk=version.pk).document, self.people[by]
        )

    @rule(data=st.data())
    def reject(self, data: st.DataObject) -> None:
        version = self._version(data)
        try:
            plans.reject(version, self.people["approver"], "not like this")
        except EXPECTED:
            pass

    @rule(data=st.data())
    def approve_own_version_around_the_services(self, data: st.DataObject) -> None:
        version = self._version(data)
        author = version.author
        digest = content_hash(compilation.stored_document(version))
        signed = gate()._signed(str(version.plan_id), version.number, digest,
                                author.username, author.username, by_policy=False)  # fmt: skip
        Approval.objects.create(version=version, reviewer=author, decision="approved",
                                content_hash=digest, signature=signed.signature)  # fmt: skip
        PlanVersion.objects.filter(pk=version.pk).update(status="approved")

    @rule(data=st.data())
    def forge_an_approval(self, data: st.DataObject) -> None:
        version = self._version(data)
        Approval.objects.create(version=version, reviewer=self.people["approver"],
                                decision="approved", content_hash=version.content_hash,
                                signature="0" * 64)  # fmt: skip
        PlanVersion.objects.filter(pk=version.pk).update(status="approved")

    @rule(data=st.data(), content=st.sampled_from(["send it outside", "risk 0", "rm -rf"]))
    def tamper_with_a_stored_document(self, data: st.DataObject, content: str) -> None:
        version = self._version(data)
        changed = copy.deepcopy(version.document)
        changed["steps"][-1]["args"]["content"] = content
        changed["steps"][2]["args"]["argv"] = ["sh", "-c", content]
        PlanVersion.objects.filter(pk=version.pk).update(document=changed)

    # -- runs ----------------------------------------------------------------------------

    @rule(data=st.data(), work=st.booleans(), by=st.sampled_from(["operator", "ada"]))
    def start(self, data: st.DataObject, work: bool, by: str) -> None:
        version = self._version(data)
        try:
            run = runs.start_run(version, self.people[by])
        except EXPECTED:
            return
        self.runs.append(run.pk)
        if work:
            drain()

    @precondition(lambda self: self.runs)
    @rule(data=st.data())
    def cancel(self, data: st.DataObject) -> None:
        try:
            runs.cancel_run(self._run(data), self.people["operator"])
        except EXPECTED:
            pass

    @precondition(lambda self: self.runs)
    @rule(data=st.data(), by=st.sampled_from(["approver", "ada", "author"]))
    def approve_waiting_steps(self, data: st.DataObject, by: str) -> None:
        run = self._run(data)
        for step in StepRun.objects.filter(run=run, status="awaiting_approval"):
            try:
                runs.approve_step(run, step.step_id, self.people[by])
            except EXPECTED:
                pass

    @precondition(lambda self: self.runs)
    @rule(data=st.data(), risk=st.integers(0, 9), gated=st.booleans(), approve=st.booleans())
    def replan(self, data: st.DataObject, risk: int, gated: bool, approve: bool) -> None:
        run = self._run(data)
        try:
            version = runs.create_replan(
                run, self.people["author"], from_data(plan_document(risk, gated, False))
            )
        except EXPECTED:
            return
        self.versions.append(version.pk)
        if approve:
            plans.approve(version, self.people["approver"], "the fix")
            self.oracle.approve(version.pk, version.document)

    @precondition(lambda self: self.runs)
    @rule(data=st.data(), work=st.booleans())
    def resume(self, data: st.DataObject, work: bool) -> None:
        run, version = self._run(data), self._version(data)
        try:
            runs.resume_run(run, version, self.people["operator"])
        except EXPECTED:
            return
        if work:
            drain()

    @rule(data=st.data(), by=st.sampled_from(["approver", "ada"]))
    def resume_automatically(self, data: st.DataObject, by: str) -> None:
        """What a worker does once a version is approved (the signal's task, which this
        test's transaction never commits to send): runs of replan: auto waiting on its
        parent resume on it, through the gate."""
        from runs import replanning

        try:
            replanning.resume_after_approval(self._version(data).pk, by)
        except EXPECTED:
            pass

    @rule()
    def work(self) -> None:
        drain()

    @rule()
    def restart_the_workers(self) -> None:
        # A fresh process: it compiles what the database holds now.
        engine._SCHEDULERS.clear()
        engine._GRAPHS.clear()

    @precondition(lambda self: self.runs)
    @rule(data=st.data())
    def crash_mid_step(self, data: st.DataObject) -> None:
        run = self._run(data)
        ready = StepRun.objects.filter(run=run, status="ready").values_list("step_id", flat=True)
        if not ready:
            return
        try:
            with locked_run(run.pk) as locked:
                claimed = worker._claim(locked, ready[0])
        except EXPECTED:
            return
        if claimed is None:
            return
        StepRun.objects.filter(run=run, step_id=claimed.step_id).update(
            lease_expires_at=timezone.now() - timedelta(seconds=1)
        )
        worker.reap_expired_leases()

    @precondition(lambda self: self.runs)
    @rule(data=st.data(), succeeded=st.booleans())
    def reconcile(self, data: st.DataObject, succeeded: bool) -> None:
        run = self._run(data)
        for step in StepRun.objects.filter(run=run, status="needs_reconciliation"):
            try:
                runs.reconcile_step(run, step.step_id, succeeded, {}, self.people["operator"])
            except EXPECTED:
                pass

    # -- the invariant ---------------------------------------------------------------------

    @invariant()
    def nothing_ran_that_another_person_did_not_approve(self) -> None:
        assert self.oracle.violations == []

    def _version(self, data: st.DataObject) -> PlanVersion:
        # Versions the planner made on workers (automatic replans) count too.
        known = sorted(set(self.versions) | set(PlanVersion.objects.values_list("pk", flat=True)))
        return PlanVersion.objects.get(pk=data.draw(st.sampled_from(known)))

    def _run(self, data: st.DataObject) -> Run:
        return Run.objects.get(pk=data.draw(st.sampled_from(self.runs)))


@pytest.mark.requires("bwrap")
@pytest.mark.slow
def test_no_unapproved_call_reaches_a_runner_whatever_happens(
    make_user, monkeypatch, tmp_path, settings
):
    # Workers' heartbeats would beat from another thread into the test's transaction;
    # crashes here expire leases by hand.
    settings.FORGE_STEP_LEASE_SECONDS = 3600
    people = {
        "author": make_user("author", "author"),
        "approver": make_user("approver", "approver"),
        "operator": make_user("operator", "operator"),
        "ada": make_user("ada", "author", "approver", "operator"),
    }
    oracle = Oracle()
    checked = ToolExecutor(
        compilation.registry(),
        PolicyEngine(compilation.policy()),
        execution.DatabaseRecordStore(),
        {name: Checked(runner, oracle) for name, runner in builtin_runners().items()},
        approvals=approval_signer(),
    )
    for module in (execution, worker, engine):
        monkeypatch.setattr(module, "executor", lambda: checked)
    # The planner (generate, automatic replans): a fixed, harmless fix each time; what
    # matters is that its versions pass the same gate.
    settings.FORGE_PLANNER = "scripted:machine"
    monkeypatch.setattr(planning, "deployment_planner", lambda: MachinePlanner())
    totals = {"calls": 0}

    def machine() -> GateMachine:
        totals["calls"] += len(oracle.calls)
        return GateMachine(people, oracle, tmp_path)

    count = examples(200)
    run_state_machine_as_test(
        machine,
        settings=hypothesis_settings(
            max_examples=count,
            stateful_step_count=12,
            # The same examples in every run, as CI's profile has them: a developer's 40
            # random ones once made no call at all (2026-12-05), and the check below
            # failed a correct gate.
            derandomize=True,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
            database=None,
        ),
    )
    # The machine did run steps: an invariant over no calls would prove nothing.
    # CI's 200 examples make 167 calls, a developer's 40 make 24 (2026-12-05).
    assert totals["calls"] + len(oracle.calls) > (100 if count >= 200 else 10)
