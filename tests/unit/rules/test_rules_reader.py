"""Reading ``forge.rules/v1``: SPEC section 10's example reads as written; every bad
document is refused with a stable code, the field and its line."""

from __future__ import annotations

import json

import pytest

from forge.rules import Condition, Requirement, Rule, RuleSet, RulesInvalid, read_rules

SPEC_EXAMPLE = """\
schema: forge.rules/v1
rules:
  - id: payments                      # stable id, shown to reviewers
    description: Money leaves the company
    when: {side_effect: [payment]}    # keys AND, values in a key OR
    require: {team: finance, approvals: 1}
  - id: production
    when: {scope: ["prod.*"]}         # globs for tool, server, scope, host
    require: {approvals: 2}           # two distinct people, any team
  - id: big-spend
    when: {cost_over: 50}
    require: {team: leads, approvals: 1}
default: {approvals: 1}               # when no rule matches
"""


def test_the_specs_example_reads_as_written():
    rules = read_rules(SPEC_EXAMPLE)

    assert rules == RuleSet(
        (
            Rule(
                "payments",
                "Money leaves the company",
                Condition(side_effect=("payment",)),
                Requirement(1, "finance"),
            ),
            Rule("production", "", Condition(scope=("prod.*",)), Requirement(2)),
            Rule("big-spend", "", Condition(cost_over=50.0), Requirement(1, "leads")),
        ),
        Requirement(1),
    )
    assert rules.teams() == ("finance", "leads")


def test_json_reads_the_same_as_yaml_and_round_trips():
    rules = read_rules(SPEC_EXAMPLE)

    assert read_rules(json.dumps(rules.to_data())) == rules


def _refusal(text: str, **kwargs) -> RulesInvalid:
    with pytest.raises(RulesInvalid) as refused:
        read_rules(text, **kwargs)
    return refused.value


def test_an_unknown_key_is_refused_with_its_line_and_field():
    error = _refusal(
        "schema: forge.rules/v1\nrules:\n  - id: a\n    require: {approvals: 1}\n"
        "    wehn: {tool: echo}\n"
    )

    assert (error.code, error.field, error.line) == ("rules_unknown_key", "rules[0].wehn", 5)
    assert "line 5, field rules[0].wehn: unknown key 'wehn'" in error.message


def test_n_below_one_is_refused_with_its_line_and_field():
    error = _refusal(
        "schema: forge.rules/v1\nrules:\n  - id: a\n    require:\n      approvals: 0\n"
    )

    assert (error.code, error.field, error.line) == (
        "rules_bad_value",
        "rules[0].require.approvals",
        5,
    )


@pytest.mark.parametrize(
    ("when", "field"),
    [
        ('{host: ["Example.COM"]}', "rules[0].when.host[0]"),
        ('{tool: ["http request"]}', "rules[0].when.tool[0]"),
        ('{scope: [""]}', "rules[0].when.scope[0]"),
        ('{host: "pay/ments"}', "rules[0].when.host"),
        ("{side_effect: [payments]}", "rules[0].when.side_effect[0]"),
    ],
)
def test_a_glob_or_class_that_can_never_match_is_refused(when, field):
    error = _refusal(
        f"schema: forge.rules/v1\nrules:\n  - id: a\n    when: {when}\n    require: {{}}\n"
    )

    assert (error.code, error.field, error.line) == ("rules_never_match", field, 4)


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("schema: forge.rules/v1\nrules: {a: 1}\n", "rules"),
        ("schema: forge.rules/v1\nrules:\n  - id: 3\n    require: {}\n", "rules[0].id"),
        ("schema: forge.rules/v1\nrules:\n  - id: a\n", "rules[0]"),
        ("schema: forge.rules/v1\ndefault: {approvals: true}\n", "default.approvals"),
        ("schema: forge.rules/v1\ndefault: {approvals: 1.5}\n", "default.approvals"),
        ("schema: forge.rules/v1\nrules:\n  - {id: a, when: {cost_over: x}, require: {}}\n",
         "rules[0].when.cost_over"),
        ("schema: forge.rules/v1\nrules:\n  - {id: a, require: {}}\n  - {id: a, require: {}}\n",
         "rules[1].id"),
        ("schema: forge.rules/v2\n", "schema"),
    ],
)  # fmt: skip
def test_a_bad_type_is_refused_naming_the_field(text, field):
    error = _refusal(text)

    assert error.code == "rules_bad_value"
    assert error.field == field
    assert error.line > 0


def test_a_team_that_does_not_exist_is_refused_when_teams_are_known():
    text = "schema: forge.rules/v1\nrules:\n  - id: a\n    require: {team: finanse}\n"

    error = _refusal(text, teams={"finance"})

    assert (error.code, error.field, error.line) == (
        "rules_unknown_team",
        "rules[0].require.team",
        4,
    )
    assert read_rules(text).teams() == ("finanse",)  # unchecked without the teams


def test_text_that_does_not_parse_is_refused_with_its_line():
    error = _refusal("schema: forge.rules/v1\nrules: [\n  - id: a\n")

    assert error.code == "rules_syntax"
    assert error.line == 3
    # The line is said once, with the parser's column.
    assert str(error) == (
        "line 3: column 3: invalid YAML: while parsing a flow node, did not find expected "
        "node content"
    )


def test_json_with_a_repeated_key_is_refused():
    error = _refusal('{"schema": "forge.rules/v1", "default": {}, "default": {"approvals": 1}}')

    assert error.code == "rules_syntax"
