"""Teams (SPEC section 10): Django groups, managed by admins over /api/v1/teams and the
Teams page, shown on each person's menu and in /me."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group

from accounts import teams
from audit.models import AuditEvent

pytestmark = pytest.mark.django_db


def test_an_admin_creates_a_team_with_members_and_it_is_audited(api_client, admin, approver):
    response = api_client(admin).post(
        "/api/v1/teams",
        {"name": "finance", "members": ["approver"]},
        content_type="application/json",
    )

    assert response.status_code == 201
    assert response.json() == {"name": "finance", "members": ["approver"]}
    assert list(approver.groups.values_list("name", flat=True)) == ["finance"]
    assert list(AuditEvent.objects.filter(object_type="team").values_list("action", flat=True)) == [
        "team.created",
        "team.members_changed",
    ]


def test_the_list_names_every_team_and_its_members(api_client, admin, approver, author):
    teams.join_teams(approver, ["finance", "leads"], actor="test")
    teams.join_teams(author, ["leads"], actor="test")

    response = api_client(admin).get("/api/v1/teams")

    assert response.status_code == 200
    assert response.json() == [
        {"name": "finance", "members": ["approver"]},
        {"name": "leads", "members": ["approver", "author"]},
    ]


def test_setting_members_to_an_unknown_user_changes_nothing(api_client, admin, approver):
    teams.join_teams(approver, ["finance"], actor="test")

    response = api_client(admin).put(
        "/api/v1/teams/finance/members", {"members": ["approver", "nobody"]},
        content_type="application/json",
    )  # fmt: skip

    assert response.status_code == 422
    assert response.json() == {"detail": "no user named nobody", "code": "unknown_user"}
    assert list(Group.objects.get(name="finance").user_set.values_list("username", flat=True)) == [
        "approver"
    ]


def test_a_team_that_exists_or_a_bad_name_is_refused(api_client, admin):
    client = api_client(admin)
    client.post("/api/v1/teams", {"name": "finance"}, content_type="application/json")

    again = client.post("/api/v1/teams", {"name": "finance"}, content_type="application/json")
    spaced = client.post("/api/v1/teams", {"name": "fin ance"}, content_type="application/json")

    assert (again.status_code, again.json()["code"]) == (422, "team_exists")
    assert (spaced.status_code, spaced.json()["code"]) == (422, "invalid_team")


def test_deleting_a_team_is_audited(api_client, admin, approver):
    teams.join_teams(approver, ["finance"], actor="test")

    response = api_client(admin).delete("/api/v1/teams/finance")

    assert response.status_code == 204
    assert not Group.objects.exists()
    deleted = AuditEvent.objects.get(action="team.deleted")
    assert deleted.payload == {"team": "finance", "members": ["approver"]}


@pytest.mark.parametrize("person", ["approver", "author", "viewer", "auditor"])
def test_only_admins_manage_teams(api_client, request, person):
    client = api_client(request.getfixturevalue(person))

    assert client.get("/api/v1/teams").status_code == 403
    assert (
        client.post("/api/v1/teams", {"name": "x"}, content_type="application/json").status_code
        == 403
    )
    assert not Group.objects.exists()


def test_me_lists_the_callers_teams(api_client, approver):
    teams.join_teams(approver, ["leads", "finance"], actor="test")

    assert api_client(approver).get("/api/v1/me").json()["teams"] == ["finance", "leads"]


def test_the_teams_page_creates_a_team_and_sets_its_members(client, admin, approver, author):
    client.force_login(admin)

    created = client.post("/accounts/teams/", {"action": "create", "name": "finance",
                                               "members": "approver"})  # fmt: skip
    changed = client.post("/accounts/teams/", {"action": "members", "name": "finance",
                                               "members": "approver, author"})  # fmt: skip
    page = client.get("/accounts/teams/")

    assert (created.status_code, changed.status_code) == (302, 302)
    assert sorted(
        Group.objects.get(name="finance").user_set.values_list("username", flat=True)
    ) == [
        "approver",
        "author",
    ]
    assert b'data-team="finance"' in page.content
    assert b'value="approver author"' in page.content


def test_the_teams_page_refuses_an_unknown_member_and_says_why(client, admin):
    client.force_login(admin)

    response = client.post("/accounts/teams/", {"action": "create", "name": "finance",
                                                "members": "nobody"})  # fmt: skip

    assert response.status_code == 400
    assert "no user named nobody" in response.content.decode()
    assert not Group.objects.exists()
    # What was typed is still there, to be mended rather than typed again.
    assert 'id="team-name" name="name" required maxlength="150" value="finance"' in (
        response.content.decode()
    )
    assert 'value="nobody"' in response.content.decode()


def test_members_the_page_refuses_stay_as_typed_for_that_team_only(client, admin, approver):
    client.force_login(admin)
    client.post("/accounts/teams/", {"action": "create", "name": "finance", "members": "approver"})
    client.post("/accounts/teams/", {"action": "create", "name": "leads", "members": "approver"})

    response = client.post(
        "/accounts/teams/", {"action": "members", "name": "finance", "members": "approver ghost"}
    )

    assert response.status_code == 400
    page = response.content.decode()
    assert 'value="approver ghost" aria-label="Members of finance"' in page
    assert 'value="approver" aria-label="Members of leads"' in page
    assert 'id="team-name" name="name" required maxlength="150" value=""' in page


def test_the_teams_page_is_for_admins(client, approver):
    client.force_login(approver)

    assert client.get("/accounts/teams/").status_code == 403


def test_the_menu_shows_the_persons_teams(client, approver):
    teams.join_teams(approver, ["finance", "leads"], actor="test")
    client.force_login(approver)

    page = client.get("/").content.decode()

    assert 'data-teams="finance,leads"' in page
    assert '<span class="team">finance</span>' in page
