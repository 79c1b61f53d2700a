"""``forge run --rules FILE --approve-as NAME[@team,...]``: the gate judges the approval
rules on the command line as on the web; each approval is printed; a bad rules file is
refused with its line and field."""

from __future__ import annotations

from .test_cli import FAILING, forge, write

RULES = """\
schema: forge.rules/v1
rules:
  - id: writes
    description: Files in the repository change
    when: {side_effect: [write]}
    require: {team: release, approvals: 1}
  - id: shell
    when: {tool: [shell]}
    require: {approvals: 2}
"""


def _run(tmp_path, *approvers):
    rules = write(tmp_path / "rules.yaml", RULES)
    args = [a for name in approvers for a in ("--approve-as", name)]
    return forge("run", "examples/release-notes.yaml", "--workspace", str(tmp_path / "ws"),
                 "--rules", str(rules), *args)  # fmt: skip


def test_a_plain_approver_does_not_satisfy_a_team_rule_and_nothing_runs(tmp_path):
    result = _run(tmp_path, "carol")

    assert result.returncode == 4, result.stdout + result.stderr
    assert (
        "waiting for a person: version 1 is not approved under the approval rules: "
        "rule writes needs 1 of release; rule shell needs 1 more person"
    ) in result.stdout
    assert not (tmp_path / "ws").exists() or list((tmp_path / "ws").iterdir()) == []


def test_two_people_one_of_the_team_run_it_and_each_approval_is_printed(tmp_path):
    result = _run(tmp_path, "carol", "dan@release,ops")

    assert result.returncode == 0, result.stdout + result.stderr
    assert "approved version 1 as carol:" in result.stdout
    assert "approved version 1 as dan@release,ops:" in result.stdout
    assert "run succeeded" in result.stdout


def test_the_same_person_twice_is_one_person(tmp_path):
    result = _run(tmp_path, "dan@release", "DAN")

    assert result.returncode == 4
    assert "rule shell needs 1 more person" in result.stdout


def test_a_bad_rules_file_is_refused_with_its_line_and_field(tmp_path):
    rules = write(tmp_path / "rules.yaml", RULES.replace("approvals: 2", "approvals: 0"))

    result = forge("run", "examples/release-notes.yaml", "--rules", str(rules),
                   "--approve-as", "carol")  # fmt: skip

    assert result.returncode == 2
    assert (
        f"--rules {rules}: line 9, field rules[1].require.approvals: must be a whole number "
        "of people, 1 or more, not 0 [rules_bad_value]"
    ) in result.stderr


ESCALATING = FAILING  # its score step fails its contract, so the planner replans

# The planner's fix also swaps the report's tool for one the approved version never had.
WITH_A_NEW_TOOL = ESCALATING.replace("risk: 42", "risk: 3").replace(
    "tool: file_write\n    args: {path: report.md, content: low risk}", "tool: noop\n    args: {}"
)


def _replanned(tmp_path, *extra):
    first = write(tmp_path / "v1.yaml", ESCALATING)
    second = write(tmp_path / "v2.yaml", WITH_A_NEW_TOOL)
    return forge("run", str(first), "--planner", f"scripted:{second}", "--workspace",
                 str(tmp_path / "ws"), "--approve-as", "carol", *extra)  # fmt: skip


def test_a_replan_that_adds_a_tool_is_an_escalation_and_waits_for_a_person(tmp_path):
    result = _replanned(tmp_path)

    assert result.returncode == 4, result.stdout + result.stderr
    assert (
        "waiting for a person: escalation: version 2 it changes step 'report' with tool "
        "'noop', new to the plan. The run stays on version 1, the last approved one, until a "
        "person accepts it (--approve-as NAME --accept-escalation)"
    ) in result.stdout
    assert "approved version 2" not in result.stdout


def test_accept_escalation_lets_the_approvers_approve_the_escalating_replan(tmp_path):
    result = _replanned(tmp_path, "--accept-escalation")

    assert result.returncode == 0, result.stdout + result.stderr
    assert "approved version 2 as carol:" in result.stdout
    assert "run succeeded (v2)" in result.stdout
