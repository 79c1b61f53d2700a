"""Rules change under four eyes (SPEC section 10, issue 28 item 5): each change is a new
rules version with its diff, audited ``rules.changed``, in force only after a second admin
approves it; a bad text is refused with its line and field and changes nothing; each
approval records the rules version it was judged under; a version approved under older
rules is judged again when a run starts and says what it now lacks."""

from __future__ import annotations

import html
import re

import pytest

from accounts import teams
from audit.models import AuditEvent
from forge.rules import read_rules
from plans import rules_changes, services
from plans.models import Approval, RulesVersion
from plans.rules import current_rules, rules_in_force

pytestmark = pytest.mark.django_db

FINANCE_READS = """\
schema: forge.rules/v1
rules:
  - id: reads
    description: Files are read
    when: {tool: [file_read]}
    require: {team: finance}
"""


@pytest.fixture
def second_admin(make_user):
    return make_user("root2", "admin")


@pytest.fixture
def finance_team(make_user):
    carol = make_user("carol", "approver")
    teams.join_teams(carol, ["finance"], actor="test")
    return carol


def post(client, url, data):
    return client.post(url, data, content_type="application/json")


def test_a_change_waits_for_a_second_admin_then_is_in_force(
    api_client, admin, second_admin, finance_team
):
    answer = post(api_client(admin), "/api/v1/rules", {"text": FINANCE_READS, "comment": "finance"})

    assert answer.status_code == 201
    body = answer.json()
    assert (body["number"], body["status"], body["proposed_by"]) == (1, "proposed", "admin")
    assert "+  - id: reads" in body["diff"]
    assert rules_in_force()[0] == 0  # not yet
    changed = AuditEvent.objects.get(action="rules.changed").payload
    assert changed["diff"] == body["diff"]

    own = post(api_client(admin), "/api/v1/rules/1/approve", {"text": ""})
    assert own.status_code == 403
    assert rules_in_force()[0] == 0

    approved = post(api_client(second_admin), "/api/v1/rules/1/approve", {"text": ""})

    assert approved.status_code == 200
    assert approved.json()["status"] == "in_force"
    assert [rule.id for rule in current_rules().rules] == ["reads"]
    assert AuditEvent.objects.get(action="rules.approved").payload["proposed_by"] == "admin"
    again = post(api_client(second_admin), "/api/v1/rules/1/approve", {"text": ""})
    assert (again.status_code, again.json()["code"]) == (409, "rules_not_proposed")


def test_a_bad_change_is_refused_with_its_line_and_field_and_nothing_is_stored(api_client, admin):
    answer = post(api_client(admin), "/api/v1/rules", {"text": FINANCE_READS})

    assert answer.status_code == 400
    assert answer.json() == {
        "detail": "line 6, field rules[0].require.team: there is no team 'finance'",
        "code": "rules_unknown_team",
        "line": 6,
        "field": "rules[0].require.team",
    }
    assert not RulesVersion.objects.exists()


def test_a_bad_change_leaves_the_rules_in_force_as_they_were(
    api_client, admin, second_admin, finance_team
):
    post(api_client(admin), "/api/v1/rules", {"text": FINANCE_READS})
    post(api_client(second_admin), "/api/v1/rules/1/approve", {"text": ""})

    for bad in (FINANCE_READS.replace("finance", "nobody"), "schema: forge.rules/v1\nrules: [\n",
                FINANCE_READS.replace("when:", "whenever:")):  # fmt: skip
        answer = post(api_client(second_admin), "/api/v1/rules", {"text": bad})
        assert answer.status_code == 400, bad

    assert rules_in_force()[0] == 1
    assert [(r.id, r.require.team) for r in current_rules().rules] == [("reads", "finance")]
    assert RulesVersion.objects.count() == 1


@pytest.mark.parametrize("person", ["approver", "author", "operator", "auditor"])
def test_only_admins_change_rules(api_client, request, person):
    client = api_client(request.getfixturevalue(person))

    assert client.get("/api/v1/rules").status_code == 403
    assert post(client, "/api/v1/rules", {"text": FINANCE_READS}).status_code == 403


def test_an_approval_records_its_rules_version_and_is_judged_again_at_a_run_start(
    api_client, admin, second_admin, finance_team, author, approver, operator, make_plan
):
    version = make_plan(author)
    services.approve(version, approver)
    assert Approval.objects.get().rules_version == 0

    changed = rules_changes.propose_rules(FINANCE_READS, admin)
    rules_changes.approve_rules(changed, second_admin)
    response = post(
        api_client(operator), "/api/v1/runs", {"plan_id": version.plan_id, "version": 1}
    )

    assert response.status_code == 409
    assert response.json()["detail"] == (
        "version 1 is not approved under the approval rules: rule reads needs 1 of finance"
    )
    services.approve(version, finance_team)
    assert Approval.objects.order_by("pk").last().rules_version == 1
    assert (
        post(
            api_client(operator), "/api/v1/runs", {"plan_id": version.plan_id, "version": 1}
        ).status_code
        == 201
    )


def test_the_rules_page_shows_the_diff_and_lets_only_another_admin_approve(
    client, admin, second_admin, finance_team
):
    client.force_login(admin)
    saved = client.post("/plans/rules/", {"text": FINANCE_READS, "comment": "finance"})
    page = client.get("/plans/rules/").content.decode()

    assert saved.status_code == 302
    assert 'data-rules-version="1"' in page
    assert "You proposed it: another admin must approve it." in page
    assert "+  - id: reads" in page

    client.force_login(second_admin)
    client.post("/plans/rules/1/approve/", {"comment": "ok"})

    assert rules_in_force()[0] == 1


def test_the_rules_page_refuses_a_bad_text_naming_the_line_and_field(client, admin):
    client.force_login(admin)

    response = client.post("/plans/rules/", {"text": "schema: forge.rules/v1\nrulez: []\n"})

    assert response.status_code == 400
    page = response.content.decode()
    assert 'data-line="2" data-field="rulez"' in page
    assert "unknown key &#x27;rulez&#x27;" in page
    assert not RulesVersion.objects.exists()


def test_the_rules_page_shows_how_rules_are_written_with_an_example_that_reads(client, admin):
    teams.create_team("finance", actor="root")
    client.force_login(admin)

    page = client.get("/plans/rules/").content.decode()

    example = re.search(r'<code id="rules-example">(.*?)</code>', page, re.DOTALL).group(1)
    # The example is a rules document the reader takes as it stands (the page's team exists).
    ruleset = read_rules(html.unescape(example), teams={"finance"})
    assert [rule.id for rule in ruleset.rules] == ["payments", "production"]
    assert client.post("/plans/rules/", {"text": html.unescape(example)}).status_code == 302
