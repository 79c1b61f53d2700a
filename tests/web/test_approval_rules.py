"""Approval rules on the web (SPEC section 10): a version is approved only when the
approvals since its latest stop satisfy every rule matching its impact; the gate judges
them again, under the rules in force, when a run starts; a bad rules file is refused at
start-up with its line and field."""

from __future__ import annotations

import pytest

from accounts import teams
from audit.models import AuditEvent
from plans import services
from plans.checks import approval_rules_check
from plans.gate import version_approval
from plans.models import PlanVersion
from reviews.queue import waiting_count
from runs import services as run_services

pytestmark = pytest.mark.django_db

# The web tests' plan reads a file (file_read) and then echoes.
FINANCE_READS = """\
schema: forge.rules/v1
rules:
  - id: reads
    description: Files are read
    when: {tool: [file_read]}
    require: {team: finance, approvals: 1}
"""
TWO_PEOPLE = """\
schema: forge.rules/v1
rules:
  - id: two
    when: {scope: ["file_*"]}
    require: {approvals: 2}
"""


def fresh(version):
    return PlanVersion.objects.get(pk=version.pk)


@pytest.fixture
def finance(make_user):
    carol = make_user("carol", "approver")
    teams.join_teams(carol, ["finance"], actor="test")
    return carol


def test_a_plain_approval_leaves_a_version_that_needs_finance_waiting(
    approval_rules, author, approver, operator, make_plan
):
    approval_rules(FINANCE_READS)
    version = make_plan(author)

    services.approve(version, approver, "fine by me")

    assert fresh(version).status == "awaiting_approval"
    payload = AuditEvent.objects.get(action="plan_version.approved").payload
    assert payload["status"] == "awaiting_approval"
    assert payload["teams"] == []
    assert payload["not_counted"] == ["approver"]
    assert payload["rules"] == [
        {"id": "reads", "description": "Files are read", "team": "finance", "required": 1,
         "approved_by": [], "satisfied": False},
    ]  # fmt: skip


def test_a_finance_members_approval_then_makes_it_approved_and_runnable(
    approval_rules, author, approver, finance, operator, make_plan
):
    approval_rules(FINANCE_READS)
    version = make_plan(author)
    services.approve(version, approver)

    services.approve(version, finance, "finance agrees")

    assert fresh(version).status == "approved"
    payload = AuditEvent.objects.filter(action="plan_version.approved").last().payload
    assert payload["teams"] == ["finance"]
    carried = version_approval(fresh(version))
    assert [a.label() for a in carried.approvers()] == ["carol@finance", "approver"]
    run = run_services.start_run(fresh(version), operator)
    assert run.status in ("running", "queued")


def test_a_two_person_rule_needs_two_distinct_people(
    approval_rules, author, approver, make_user, make_plan
):
    approval_rules(TWO_PEOPLE)
    version = make_plan(author)

    services.approve(version, approver)
    services.approve(version, approver, "again")
    assert fresh(version).status == "awaiting_approval"

    services.approve(version, make_user("dan", "approver"))
    assert fresh(version).status == "approved"


def test_a_rejection_voids_the_approvals_before_it(
    approval_rules, author, approver, make_user, make_plan
):
    approval_rules(TWO_PEOPLE)
    version = make_plan(author)
    dan, erin = make_user("dan", "approver"), make_user("erin", "approver")
    services.approve(version, approver)

    services.reject(version, dan, "not this week")
    services.approve(version, erin)

    assert fresh(version).status == "awaiting_approval"  # approver's counted before the stop
    services.approve(version, approver)
    assert fresh(version).status == "approved"


def test_a_changes_request_stops_the_version_and_the_approvals_before_it_no_longer_count(
    approval_rules, author, approver, make_user, make_plan, api_client
):
    approval_rules(TWO_PEOPLE)
    version = make_plan(author)
    dan, erin = make_user("dan", "approver"), make_user("erin", "approver")
    services.approve(version, approver)

    services.request_changes(version, dan, "name the report's owner")
    assert fresh(version).status == "changes_requested"
    body = api_client(erin).get(f"/api/v1/plans/{version.plan_id}/versions/1").json()
    assert body["rules"][0]["approved_by"] == []
    services.approve(version, erin)

    assert fresh(version).status == "awaiting_approval"  # approver's counted before the stop
    services.approve(version, approver)
    assert fresh(version).status == "approved"


def test_a_version_approved_under_older_rules_cannot_start_and_says_what_it_lacks(
    approval_rules, author, approver, operator, make_plan, api_client
):
    version = make_plan(author)
    services.approve(version, approver)
    assert fresh(version).status == "approved"

    approval_rules(FINANCE_READS)
    response = api_client(operator).post(
        "/api/v1/runs", {"plan_id": version.plan_id, "version": 1}, content_type="application/json"
    )

    assert response.status_code == 409
    assert response.json()["code"] == "rules_unsatisfied"
    assert response.json()["detail"] == (
        "version 1 is not approved under the approval rules: rule reads needs 1 of finance"
    )


def test_a_bad_rules_file_is_refused_at_start_up_with_its_line_and_field(approval_rules):
    path = approval_rules(FINANCE_READS.replace("approvals: 1", "approvals: 0"))

    [error] = approval_rules_check()

    assert error.id == "forge.E002"
    assert error.msg == (
        f"FORGE_APPROVAL_RULES: {path}: line 6, field rules[0].require.approvals: must be a "
        "whole number of people, 1 or more, not 0 [rules_bad_value]"
    )


def test_a_rules_file_naming_a_team_that_does_not_exist_is_refused(approval_rules):
    path = approval_rules(FINANCE_READS)

    [error] = approval_rules_check()

    assert error.msg == (
        f"FORGE_APPROVAL_RULES: {path}: line 6, field rules[0].require.team: there is no team "
        "'finance' [rules_unknown_team]"
    )


def test_a_good_rules_file_passes_the_check(approval_rules, finance):
    approval_rules(FINANCE_READS)

    assert approval_rules_check() == []


# --- Shown where people decide -------------------------------------------------------


def test_the_version_answer_lists_each_matching_rule_and_who_counts(
    approval_rules, author, approver, finance, make_plan, api_client
):
    approval_rules(FINANCE_READS)
    version = make_plan(author)
    services.approve(version, approver)

    body = api_client(approver).get(f"/api/v1/plans/{version.plan_id}/versions/1").json()

    assert body["status"] == "awaiting_approval"
    assert body["rules"] == [
        {"id": "reads", "description": "Files are read", "team": "finance", "required": 1,
         "approved_by": [], "satisfied": False},
    ]  # fmt: skip
    assert body["not_counted"] == ["approver"]
    assert body["waiting_for"] == ["rule reads needs 1 of finance"]
    assert body["approvals"][0]["teams"] == []

    services.approve(version, finance)
    body = api_client(approver).get(f"/api/v1/plans/{version.plan_id}/versions/1").json()

    assert body["rules"][0]["approved_by"] == ["carol"]
    assert body["rules"][0]["satisfied"] is True
    assert body["waiting_for"] == []
    assert body["approvals"][1]["teams"] == ["finance"]


def test_the_approval_answer_says_whether_the_version_still_waits_and_for_what(
    approval_rules, author, approver, finance, make_plan, api_client
):
    approval_rules(FINANCE_READS)
    version = make_plan(author)
    path = f"/api/v1/plans/{version.plan_id}/versions/1/approve"

    plain = api_client(approver).post(path, {}, content_type="application/json").json()
    done = api_client(finance).post(path, {}, content_type="application/json").json()

    assert (plain["decision"], plain["version_status"], plain["waiting_for"]) == (
        "approved",
        "awaiting_approval",
        ["rule reads needs 1 of finance"],
    )
    assert (done["version_status"], done["waiting_for"], done["teams"]) == (
        "approved",
        [],
        ["finance"],
    )


def test_the_card_and_the_version_page_say_what_the_version_waits_for(
    approval_rules, author, approver, finance, make_plan, client
):
    approval_rules(FINANCE_READS)
    version = make_plan(author)
    services.approve(version, approver)
    client.force_login(finance)

    card = client.get("/review/").content.decode()
    page = client.get(f"/plans/{version.plan_id}/versions/1/").content.decode()

    for html in (card, page):
        assert 'data-rule="reads" data-satisfied="false"' in html
        assert "needs 1 of finance" in html
        assert "in none of the teams asked for" in html
        assert "approver" in html.split("not-counted", 1)[1][:200]


def test_the_queue_and_the_inbox_reach_only_those_who_can_satisfy_an_open_rule(
    approval_rules, author, approver, finance, make_plan, api_client, client,
    django_capture_on_commit_callbacks,
):  # fmt: skip
    approval_rules(FINANCE_READS)
    with django_capture_on_commit_callbacks(execute=True):
        version = make_plan(author)

    inbox = {
        who.username: [i["kind"] for i in api_client(who).get("/api/v1/me/inbox").json()["items"]]
        for who in (approver, finance)
    }
    assert inbox == {"approver": [], "carol": ["version_submitted"]}
    [item] = api_client(finance).get("/api/v1/me/inbox").json()["items"]
    assert item["title"] == (
        f"{version.plan.name} v1 by author waits for your review: rule reads needs 1 of finance"
    )
    client.force_login(approver)
    assert f'id="version-{version.pk}"' not in client.get("/review/").content.decode()
    client.force_login(finance)
    assert "needs 1 of finance" in client.get("/review/").content.decode()


def test_the_authors_home_says_which_team_a_version_waits_on(
    approval_rules, author, approver, make_plan, client, api_client
):
    approval_rules(FINANCE_READS)
    version = make_plan(author)
    services.approve(version, approver)
    client.force_login(author)

    page = client.get("/").content.decode()
    home = api_client(author).get("/api/v1/me/home").json()

    assert 'id="home-waiting_on_rules"' in page
    assert "needs 1 of finance" in page
    [section] = [s for s in home["sections"] if s["name"] == "waiting_on_rules"]
    assert [(i["title"], i["label"]) for i in section["items"]] == [
        (f"{version.plan.name} v1", "needs 1 of finance")
    ]


def test_the_approvers_home_and_waiting_count_list_only_versions_they_can_help_approve(
    approval_rules, author, approver, finance, make_plan, api_client
):
    approval_rules(FINANCE_READS)
    version = make_plan(author)

    def reviews(user):
        sections = api_client(user).get("/api/v1/me/home").json()["sections"]
        [section] = [s for s in sections if s["name"] == "reviews"]
        return section["count"], [(item["title"], item["label"]) for item in section["items"]]

    assert reviews(approver) == (0, [])
    assert reviews(finance) == (1, [(f"{version.plan.name} v1", "needs 1 of finance")])
    assert (waiting_count(approver), waiting_count(finance)) == (0, 1)

    services.approve(version, finance)  # satisfied: nobody is asked any more
    assert reviews(finance) == (0, [])


def test_a_plain_approval_is_kept_like_a_comment_and_counts_only_toward_the_default(
    approval_rules, author, approver, make_plan, client
):
    approval_rules(FINANCE_READS)
    version = make_plan(author)
    services.approve(version, approver, "looks fine to me")
    client.force_login(author)

    page = client.get(f"/plans/{version.plan_id}/versions/1/").content.decode()
    note = page.split('class="small muted not-counted">', 1)[1].split("</p>", 1)[0]
    assert note == (
        'Approved by <span class="names">approver</span>, in none of the teams asked for: '
        "kept like a comment, it counts only toward <code>default</code> (when no rule "
        "matches)."
    )
    assert fresh(version).approvals.get().comment == "looks fine to me"

    # Under rules that no longer match the version, the default applies and it counts.
    approval_rules(FINANCE_READS.replace("file_read", "http_request"))
    body = client.get(f"/api/v1/plans/{version.plan_id}/versions/1").json()
    assert body["not_counted"] == []
    assert body["rules"] == [
        {"id": "default", "description": "when no rule matches", "team": None, "required": 1,
         "approved_by": ["approver"], "satisfied": True},
    ]  # fmt: skip


def _asks(api_client, user):
    return [
        (item["kind"], item["resolved"], item["resolution"])
        for item in api_client(user).get("/api/v1/me/inbox").json()["items"]
        if item["kind"] == "version_submitted"
    ]


def test_an_approver_whose_approval_counts_is_no_longer_asked_while_others_still_are(
    approval_rules, author, approver, make_user, make_plan, api_client,
    django_capture_on_commit_callbacks,
):  # fmt: skip
    approval_rules(TWO_PEOPLE)
    dan = make_user("dan", "approver")
    with django_capture_on_commit_callbacks(execute=True):
        version = make_plan(author)
    assert _asks(api_client, approver) == [("version_submitted", False, "")]

    with django_capture_on_commit_callbacks(execute=True):
        services.approve(version, approver)

    assert fresh(version).status == "awaiting_approval"
    assert _asks(api_client, approver) == [
        ("version_submitted", True, "waits for others: rule two needs 1 more person")
    ]
    assert _asks(api_client, dan) == [("version_submitted", False, "")]
    assert api_client(approver).get("/api/v1/me/inbox?unread=true").json()["items"] == []
