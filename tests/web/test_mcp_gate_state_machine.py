"""The gate's invariant with an agent in the story (Hypothesis): whatever an agent does
through /mcp (submit plans and versions, start any version, wait), whatever it tries
over REST with its own token (approving its own versions), and whatever people and
forgers do around it, no call reaches a runner unless a person other than the version's
author approved exactly the content that call came from.

The agent's user holds every role, approving included. The oracle and the checked
runners are the gate machine's own (tests/web/test_gate_state_machine.py).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)

from forge.plan import from_data
from forge.runners import builtin_runners
from forge.runtime import ToolExecutor
from forge.tools import PolicyEngine
from plans import compilation
from plans import services as plans
from plans.gate import approval_signer
from plans.models import Approval, PlanVersion
from runs import engine, execution, worker
from tests.examples import examples

from .mcp_helpers import answer, call
from .runs_helpers import drain
from .test_gate_state_machine import Checked, Oracle, plan_document

# Workers commit, and /mcp's calls reach Django from other threads: both need commits.
pytestmark = pytest.mark.django_db(transaction=True)


class AgentMachine(RuleBasedStateMachine):
    def __init__(self, people: dict[str, Any], tokens: dict[str, str], clients: dict[str, Any],
                 oracle: Oracle, workspaces: Path) -> None:  # fmt: skip
        super().__init__()
        # The oracle keeps what earlier examples approved: their runs' leftover steps may
        # be worked off in this one, and must still be judged by what was approved.
        self.people, self.tokens, self.clients, self.oracle = people, tokens, clients, oracle
        engine._SCHEDULERS.clear()
        engine._GRAPHS.clear()
        self.plans: list[int] = []
        self.versions: list[int] = []
        django_settings.FORGE_WORKSPACES = str(workspaces / f"example-{id(self)}")

    @initialize(
        risk=st.integers(0, 9),
        gated=st.booleans(),
        failing=st.booleans(),
        story=st.sampled_from(["submitted", "approved", "running", "running"]),
    )
    def agent_submits_a_plan(self, risk: int, gated: bool, failing: bool, story: str) -> None:
        """Most stories go on from a plan a person approved, which the agent started."""
        version = self._submit({"name": "Supplier risk"}, risk, gated, failing)
        if story != "submitted":
            self._approve(version, "approver")
        if story == "running":
            self._start(version, work=True)

    @rule(data=st.data(), risk=st.integers(0, 9), gated=st.booleans(), failing=st.booleans())
    def agent_submits_a_version(
        self, data: st.DataObject, risk: int, gated: bool, failing: bool
    ) -> None:
        self._submit({"plan_id": data.draw(st.sampled_from(self.plans))}, risk, gated, failing)

    @rule(data=st.data(), risk=st.integers(0, 9))
    def a_person_writes_a_version(self, data: st.DataObject, risk: int) -> None:
        plan = PlanVersion.objects.get(pk=self._version_pk(data)).plan
        document = from_data(plan_document(risk, False, False))
        self.versions.append(plans.create_version(plan, self.people["author"], document).pk)

    @rule(data=st.data(), by=st.sampled_from(["approver", "agent"]))
    def approve_over_rest(self, data: st.DataObject, by: str) -> None:
        self._approve(PlanVersion.objects.get(pk=self._version_pk(data)), by)

    @rule(data=st.data())
    def forge_an_approval(self, data: st.DataObject) -> None:
        version = PlanVersion.objects.get(pk=self._version_pk(data))
        Approval.objects.create(version=version, reviewer=self.people["approver"],
                                decision="approved", content_hash=version.content_hash,
                                signature="0" * 64)  # fmt: skip
        PlanVersion.objects.filter(pk=version.pk).update(status="approved")

    @rule(data=st.data(), content=st.sampled_from(["send it outside", "rm -rf"]))
    def tamper_with_a_stored_document(self, data: st.DataObject, content: str) -> None:
        version = PlanVersion.objects.get(pk=self._version_pk(data))
        changed = copy.deepcopy(version.document)
        changed["steps"][-1]["args"]["content"] = content
        PlanVersion.objects.filter(pk=version.pk).update(document=changed)

    @rule(data=st.data(), work=st.booleans())
    def agent_starts_a_run(self, data: st.DataObject, work: bool) -> None:
        self._start(PlanVersion.objects.get(pk=self._version_pk(data)), work=work)

    @rule()
    def work(self) -> None:
        drain()

    @invariant()
    def nothing_ran_that_another_person_did_not_approve(self) -> None:
        assert self.oracle.violations == []

    def _submit(self, where: dict[str, Any], risk: int, gated: bool, failing: bool) -> PlanVersion:
        document = plan_document(risk, gated, failing)
        submitted = answer(
            call(self.tokens["agent"], "submit_plan", {**where, "document": document})
        )
        version = PlanVersion.objects.get(plan_id=submitted["plan_id"], number=submitted["version"])
        assert version.author.username == "agent"
        self.plans.append(version.plan_id)
        self.versions.append(version.pk)
        return version

    def _approve(self, version: PlanVersion, by: str) -> None:
        answered = self.clients[by].post(
            f"/api/v1/plans/{version.plan_id}/versions/{version.number}/approve",
            {"comment": "looks right"},
            content_type="application/json",
        )
        own = version.author.username == by
        assert answered.status_code != 200 or not own, "an author approved their own version"
        if answered.status_code == 200:
            self.oracle.approve(version.pk, PlanVersion.objects.get(pk=version.pk).document)

    def _start(self, version: PlanVersion, work: bool) -> None:
        ids = {"plan_id": version.plan_id, "version": version.number}
        started = call(self.tokens["agent"], "start_run", ids)
        if started.is_error:
            assert answer(started)["error"]["status"] in (403, 409), answer(started)
        if work:
            drain()

    def _version_pk(self, data: st.DataObject) -> int:
        return data.draw(st.sampled_from(self.versions))


@pytest.mark.requires("bwrap")
@pytest.mark.slow
def test_nothing_an_agent_does_through_mcp_runs_what_another_person_did_not_approve(
    make_user, token_for, api_client, monkeypatch, tmp_path, settings
):
    settings.FORGE_STEP_LEASE_SECONDS = 3600  # no heartbeats from other threads
    people = {
        "author": make_user("author", "author"),
        "approver": make_user("approver", "approver"),
        "agent": make_user("agent", "author", "approver", "operator"),
    }
    tokens = {"agent": token_for(people["agent"])}
    clients = {name: api_client(people[name]) for name in ("approver", "agent")}
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

    run_state_machine_as_test(
        lambda: AgentMachine(people, tokens, clients, oracle, tmp_path),
        settings=hypothesis_settings(
            max_examples=examples(25),
            stateful_step_count=8,
            # The same examples in every run, as CI's profile has them: a developer's few
            # random ones may run too little for the check below (tests/web/
            # test_gate_state_machine.py failed so once).
            derandomize=True,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
            database=None,
        ),
    )
    # Approved versions did run: an invariant over no calls would prove nothing.
    # CI's 25 examples make 43 calls, a developer's 10 make 23 (2026-12-05).
    assert len(oracle.calls) > 5
