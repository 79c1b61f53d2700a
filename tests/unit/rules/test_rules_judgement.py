"""Judging approvals against rules: the author never counts, a person counts once and
toward every rule they qualify for, someone who qualifies for no matching rule is not
counted, a stop ends it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from forge.rules import Approver, Subject, judge, read_rules

RULES = read_rules(
    """
schema: forge.rules/v1
rules:
  - id: payments
    description: Money leaves the company
    when: {side_effect: [payment]}
    require: {team: finance, approvals: 1}
  - id: production
    when: {scope: ["prod.*"]}
    require: {approvals: 2}
  - id: partners
    when: {host: ["*.partner.example"], tool: [http_request]}
    require: {team: security}
default: {approvals: 1}
"""
)
PAYMENT = Subject(side_effects=frozenset({"read", "payment"}), scopes=frozenset({"payments"}))
PROD_PAYMENT = Subject(side_effects=frozenset({"payment"}), scopes=frozenset({"prod.db"}))
HARMLESS = Subject(side_effects=frozenset({"read"}), scopes=frozenset({"file_read"}))


def _ids(judgement):
    return [(rule.id, rule.approved_by, rule.satisfied) for rule in judgement.rules]


def test_a_version_no_rule_matches_needs_one_person_other_than_the_author():
    judgement = judge(RULES, HARMLESS, author="alice", approvals=[Approver("bob")])

    assert _ids(judgement) == [("default", ("bob",), True)]
    assert judgement.approved


def test_a_plain_approver_does_not_satisfy_a_team_rule_and_is_not_counted():
    judgement = judge(RULES, PAYMENT, author="alice", approvals=[Approver("bob")])

    assert _ids(judgement) == [("payments", (), False)]
    assert judgement.not_counted == ("bob",)
    assert judgement.lacking() == ("rule payments needs 1 of finance",)
    assert judgement.teams_open == ("finance",)
    assert not judgement.approved


def test_a_finance_member_satisfies_the_payment_rule():
    approvals = [Approver("bob"), Approver("carol", ("finance",))]

    judgement = judge(RULES, PAYMENT, author="alice", approvals=approvals)

    assert _ids(judgement) == [("payments", ("carol",), True)]
    assert judgement.approved


def test_a_two_person_rule_needs_two_distinct_people_and_the_same_person_twice_is_one():
    twice = [Approver("carol", ("finance",)), Approver(" CAROL ")]

    judgement = judge(RULES, PROD_PAYMENT, author="alice", approvals=twice)

    assert _ids(judgement) == [("payments", ("carol",), True), ("production", ("carol",), False)]
    assert judgement.lacking() == ("rule production needs 1 more person",)

    judgement = judge(RULES, PROD_PAYMENT, author="alice", approvals=[*twice, Approver("dan")])

    assert _ids(judgement) == [
        ("payments", ("carol",), True),
        ("production", ("carol", "dan"), True),
    ]
    assert judgement.approved


def test_the_author_never_counts_even_as_a_team_member():
    judgement = judge(RULES, PAYMENT, author="Carol", approvals=[Approver("carol", ("finance",))])

    assert _ids(judgement) == [("payments", (), False)]
    assert judgement.not_counted == ()


def test_a_stop_ends_the_version_whatever_was_counted():
    judgement = judge(
        RULES,
        PAYMENT,
        author="alice",
        approvals=[Approver("carol", ("finance",))],
        stopped="rejected by dan",
    )

    assert judgement.satisfied
    assert not judgement.approved
    assert judgement.lacking() == ("rejected by dan",)


def test_globs_of_different_keys_must_all_match():
    only_host = Subject(hosts=frozenset({"api.partner.example"}), tools=frozenset({"echo"}))
    both = Subject(hosts=frozenset({"api.partner.example"}), tools=frozenset({"http_request"}))

    assert [rule.id for rule in RULES.matching(only_host)] == ["default"]
    assert [rule.id for rule in RULES.matching(both)] == ["partners"]


def test_limits_match_only_above_them():
    rules = read_rules(
        "schema: forge.rules/v1\nrules:\n"
        "  - {id: spend, when: {cost_over: 50}, require: {approvals: 2}}\n"
        "  - {id: long, when: {steps_over: 10, tokens_over: 100}, require: {approvals: 2}}\n"
    )

    assert [r.id for r in rules.matching(Subject(cost=50.0))] == ["default"]
    assert [r.id for r in rules.matching(Subject(cost=50.01))] == ["spend"]
    assert [r.id for r in rules.matching(Subject(steps=11, tokens=100))] == ["default"]
    assert [r.id for r in rules.matching(Subject(steps=11, tokens=101))] == ["long"]


NAMES = st.sampled_from(["alice", "Alice", "bob", "BOB ", "carol", "dan", "erin"])
TEAMS = st.lists(st.sampled_from(["finance", "security", "leads"]), max_size=2)
APPROVALS = st.lists(st.builds(Approver, NAMES, TEAMS.map(tuple)), max_size=8)
SUBJECTS = st.builds(
    Subject,
    side_effects=st.frozensets(st.sampled_from(["read", "payment", "external"])),
    scopes=st.frozensets(st.sampled_from(["prod.db", "file_read"])),
)


@given(APPROVALS, SUBJECTS)
def test_no_rule_ever_counts_the_author_or_anyone_twice(approvals, subject):
    judgement = judge(RULES, subject, author="alice", approvals=approvals)

    for rule in judgement.rules:
        keys = [name.strip().casefold() for name in rule.approved_by]
        assert "alice" not in keys
        assert len(keys) == len(set(keys))
        assert rule.satisfied == (len(keys) >= rule.required)


@given(APPROVALS, APPROVALS, SUBJECTS)
def test_more_approvals_never_undo_a_satisfied_rule(first, more, subject):
    before = judge(RULES, subject, author="alice", approvals=first)
    after = judge(RULES, subject, author="alice", approvals=first + more)

    for old, new in zip(before.rules, after.rules, strict=True):
        assert not old.satisfied or new.satisfied


@given(APPROVALS, SUBJECTS)
def test_the_order_of_approvals_changes_no_verdict(approvals, subject):
    forward = judge(RULES, subject, author="alice", approvals=approvals)
    backward = judge(RULES, subject, author="alice", approvals=list(reversed(approvals)))

    assert [r.satisfied for r in forward.rules] == [r.satisfied for r in backward.rules]
    assert forward.approved == backward.approved


def test_only_people_who_can_bring_an_open_rule_closer_are_asked():
    judgement = judge(RULES, PROD_PAYMENT, author="alice", approvals=[Approver("bob")])

    assert judgement.can_help("carol", ["finance"])  # payments, and production's second
    assert judgement.can_help("dan", [])  # production's second person
    assert not judgement.can_help("bob", [])  # counted already toward production
    assert not judgement.can_help("alice", ["finance"], author="alice")

    paid = judge(RULES, PAYMENT, author="alice", approvals=[Approver("carol", ("finance",))])
    assert not paid.can_help("dan", ["finance"])  # nothing is open
