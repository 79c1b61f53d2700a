"""A step that waits for its approval is judged by the approval rules that match that step
(SPEC section 10): an approval they do not find enough is kept and counted with the next
ones for the same call and preview; the step runs only once the rules are satisfied."""

from __future__ import annotations

import pytest

from accounts import teams
from audit.models import AuditEvent
from plans import services as plan_services
from runs import services as run_services
from runs.models import Run, StepRun

from .runs_helpers import approved_version, drain

pytestmark = pytest.mark.django_db(transaction=True)

STEPS = [
    {"id": "inspect", "description": "Collect facts", "tool": "echo", "args": {"facts": [1]}},
    {"id": "publish", "description": "Write the report", "tool": "file_write",
     "args": {"path": "report.md", "content": "low risk"}, "depends_on": ["inspect"]},
]  # fmt: skip
WRITES_NEED_FINANCE = """\
schema: forge.rules/v1
rules:
  - id: writes
    when: {side_effect: [write]}
    require: {team: finance}
"""
WRITES_NEED_TWO = """\
schema: forge.rules/v1
rules:
  - id: writes
    when: {tool: [file_write]}
    require: {approvals: 2}
"""


@pytest.fixture
def finance(make_user):
    carol = make_user("carol", "approver")
    teams.join_teams(carol, ["finance"], actor="test")
    return carol


def _waiting_run(author, approvers, operator):
    first, *others = approvers
    version = approved_version(author, first, STEPS, requires_approval_before=["file_write"])
    for other in others:
        plan_services.approve(version, other)
    version.refresh_from_db()
    assert version.status == "approved"
    run = run_services.start_run(version, operator)
    drain()
    run.refresh_from_db()
    assert run.status == "awaiting_approval"
    return run


def _publish(run):
    return StepRun.objects.get(run=run, step_id="publish").status


def test_a_plain_approval_of_a_step_that_needs_finance_is_counted_and_it_keeps_waiting(
    approval_rules, author, approver, finance, operator
):
    approval_rules(WRITES_NEED_FINANCE)
    run = _waiting_run(author, [finance], operator)

    run_services.approve_step(run, "publish", approver, "fine by me")

    assert _publish(run) == "awaiting_approval"
    counted = AuditEvent.objects.get(action="run.step_approval_counted").payload
    assert counted["waiting"] == (
        "step 'publish' is not approved under the approval rules: rule writes needs 1 of finance"
    )

    run_services.approve_step(run, "publish", finance, "finance agrees")
    drain()

    assert Run.objects.get(pk=run.pk).status == "succeeded"
    approved = AuditEvent.objects.get(action="run.step_approved").payload
    assert approved["approved_by"] == ["carol@finance", "approver"]


def test_a_step_that_needs_two_people_needs_two_distinct_people(
    approval_rules, author, approver, make_user, operator
):
    approval_rules(WRITES_NEED_TWO)
    dan = make_user("dan", "approver")
    run = _waiting_run(author, [approver, dan], operator)

    run_services.approve_step(run, "publish", approver)
    run_services.approve_step(run, "publish", approver, "again")
    assert _publish(run) == "awaiting_approval"

    run_services.approve_step(run, "publish", dan)
    drain()
    assert Run.objects.get(pk=run.pk).status == "succeeded"


# --- Shown where people decide, and only to those who can satisfy a rule -------------


def _inbox_kinds(api_client, user):
    return [item["kind"] for item in api_client(user).get("/api/v1/me/inbox").json()["items"]]


def _home_section(api_client, user, name):
    sections = api_client(user).get("/api/v1/me/home").json()["sections"]
    [section] = [s for s in sections if s["name"] == name]
    return section


def test_a_step_that_needs_finance_reaches_only_finance_and_its_card_lists_the_rule(
    approval_rules, author, approver, finance, operator, client, api_client
):
    approval_rules(WRITES_NEED_FINANCE)
    run = _waiting_run(author, [finance], operator)
    key = f'id="step-{run.pk}-publish"'

    client.force_login(finance)
    card = client.get("/review/").content.decode()
    assert key in card
    rules = card.split(key, 1)[1]
    assert 'data-rule="writes" data-satisfied="false"' in rules
    assert "needs 1 of finance" in rules
    [told] = [
        item["title"]
        for item in api_client(finance).get("/api/v1/me/inbox").json()["items"]
        if item["kind"] == "step_waiting"
    ]
    assert told == (
        f"Step publish of run #{run.pk} (Supplier risk) waits for you: rule writes needs 1 of "
        "finance"
    )
    assert _home_section(api_client, finance, "steps")["count"] == 1

    # The plain approver could approve, but it would count toward nothing: not asked.
    client.force_login(approver)
    assert key not in client.get("/review/").content.decode()
    assert "step_waiting" not in _inbox_kinds(api_client, approver)
    assert _home_section(api_client, approver, "steps") == {
        "name": "steps", "title": "Steps waiting for your approval", "count": 0, "items": [],
        "more_url": "/review/",
    }  # fmt: skip


def test_the_step_card_counts_an_earlier_approval_and_the_person_who_gave_it_is_not_asked_again(
    approval_rules, author, approver, make_user, operator, client, api_client
):
    approval_rules(WRITES_NEED_TWO)
    dan = make_user("dan", "approver")
    erin = make_user("erin", "approver")
    run = _waiting_run(author, [approver, dan], operator)
    key = f'id="step-{run.pk}-publish"'

    run_services.approve_step(run, "publish", approver, "fine by me")

    client.force_login(erin)
    rules = client.get("/review/").content.decode().split(key, 1)[1]
    assert 'data-rule="writes" data-satisfied="false"' in rules
    assert "needs 1 more person" in rules
    assert "<td>approver</td>" in rules
    client.force_login(approver)
    assert key not in client.get("/review/").content.decode()
    assert _home_section(api_client, approver, "steps")["count"] == 0
    [row] = _home_section(api_client, erin, "steps")["items"]
    assert (row["title"], row["label"]) == (
        f"Step publish of run #{run.pk} (Supplier risk)",
        "needs 1 more person",
    )


def test_the_run_answer_lists_the_rules_matching_each_waiting_step(
    approval_rules, author, approver, finance, operator, api_client
):
    approval_rules(WRITES_NEED_FINANCE)
    run = _waiting_run(author, [finance], operator)
    run_services.approve_step(run, "publish", approver)
    expected = [
        {"id": "writes", "description": "", "team": "finance", "required": 1,
         "approved_by": [], "satisfied": False, "lacking": "needs 1 of finance"},
    ]  # fmt: skip

    answer = api_client(approver).get(f"/api/v1/runs/{run.pk}").json()
    steps = {step["step_id"]: step for step in answer["steps"]}
    one = api_client(approver).get(f"/api/v1/runs/{run.pk}/steps/publish/rules")
    done = api_client(approver).get(f"/api/v1/runs/{run.pk}/steps/inspect/rules").json()
    missing = api_client(approver).get(f"/api/v1/runs/{run.pk}/steps/nope/rules")

    assert (steps["inspect"]["rules"], steps["inspect"]["not_counted"]) == (None, [])
    assert steps["publish"]["rules"] == expected
    assert steps["publish"]["not_counted"] == ["approver"]
    assert one.json() == {"step_id": "publish", "status": "awaiting_approval",
                          "rules": expected, "not_counted": ["approver"]}  # fmt: skip
    assert done == {"step_id": "inspect", "status": "succeeded", "rules": None, "not_counted": []}
    assert missing.status_code == 404

    run_services.approve_step(run, "publish", finance)
    answer = api_client(approver).get(f"/api/v1/runs/{run.pk}/steps/publish/rules").json()
    assert (answer["status"], answer["rules"]) == ("ready", None)


def test_a_step_approver_whose_approval_counts_is_no_longer_asked_while_others_still_are(
    approval_rules, author, approver, make_user, operator, api_client
):
    approval_rules(WRITES_NEED_TWO)
    dan = make_user("dan", "approver")
    erin = make_user("erin", "approver")
    run = _waiting_run(author, [approver, dan], operator)

    def asks(user):
        items = api_client(user).get("/api/v1/me/inbox").json()["items"]
        return [(i["resolved"], i["resolution"]) for i in items if i["kind"] == "step_waiting"]

    assert asks(approver) == asks(erin) == [(False, "")]
    run_services.approve_step(run, "publish", approver)

    assert asks(approver) == [(True, "waits for others: rule writes needs 1 more person")]
    assert asks(erin) == [(False, "")]
