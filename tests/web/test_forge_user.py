"""``manage.py forge_user``: create and update users, print tokens for scripts."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from accounts.models import ApiToken, User
from audit.models import AuditEvent

pytestmark = pytest.mark.django_db


def forge_user(*args):
    out, err = io.StringIO(), io.StringIO()
    call_command("forge_user", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_it_creates_a_user_with_roles_and_no_usable_password():
    out, err = forge_user("ci-bot", "--role", "operator", "--role", "viewer")

    user = User.objects.get(username="ci-bot")
    assert user.roles == ["operator", "viewer"]
    assert not user.has_usable_password()
    assert out == ""
    assert err == "created user ci-bot (operator, viewer)\n"


def test_it_sets_a_password_that_logs_in():
    forge_user("alice", "--role", "author", "--password", "correct-horse-battery-staple")

    response = Client().post(
        "/accounts/login/", {"username": "alice", "password": "correct-horse-battery-staple"}
    )

    assert response.status_code == 302


def test_it_refuses_a_weak_password():
    with pytest.raises(CommandError, match="too common"):
        forge_user("alice", "--password", "password")

    assert not User.objects.filter(username="alice").exists()


def test_it_replaces_the_roles_of_an_existing_user(author):
    out, err = forge_user("author", "--role", "approver")

    author.refresh_from_db()
    assert author.roles == ["approver"]
    assert err == "updated user author (approver)\n"


def test_it_keeps_the_roles_when_none_are_given(author):
    forge_user("author", "--password", "correct-horse-battery-staple")

    author.refresh_from_db()
    assert author.roles == ["author"]


def test_it_refuses_an_unknown_role():
    with pytest.raises(CommandError, match="invalid choice: 'root'"):
        forge_user("alice", "--role", "root")


def test_it_refuses_an_invalid_username():
    with pytest.raises(CommandError, match="valid username"):
        forge_user("no spaces allowed")


def test_with_token_it_prints_only_a_working_token():
    out, _ = forge_user("ci-bot", "--role", "operator", "--token")

    value = out.strip()
    assert out == value + "\n"
    assert ApiToken.objects.get().name == "forge_user"
    response = Client().get("/api/v1/me", headers={"authorization": f"Bearer {value}"})
    assert response.status_code == 200
    assert response.json()["username"] == "ci-bot"


def test_it_audits_what_it_did_as_the_cli():
    forge_user("ci-bot", "--role", "operator", "--token")
    forge_user("ci-bot", "--role", "viewer")

    user = User.objects.get()
    token = ApiToken.objects.get()
    assert [
        (e.actor, e.action, e.object_type, e.object_id, e.payload) for e in AuditEvent.objects.all()
    ] == [
        (
            "cli:forge_user",
            "user.created",
            "user",
            str(user.pk),
            {"changed": ["roles"], "roles": ["operator"], "username": "ci-bot"},
        ),
        (
            "cli:forge_user",
            "token.created",
            "api_token",
            str(token.pk),
            {"name": "forge_user", "prefix": token.prefix, "user": "ci-bot"},
        ),
        (
            "cli:forge_user",
            "user.updated",
            "user",
            str(user.pk),
            {"changed": ["roles"], "roles": ["viewer"], "username": "ci-bot"},
        ),
    ]


def test_an_update_that_changes_nothing_writes_no_audit_event(author):
    forge_user("author", "--role", "author")

    assert AuditEvent.objects.count() == 0


def test_team_creates_each_team_and_adds_the_user_keeping_other_teams():
    out, err = forge_user("carol", "--role", "approver", "--team", "finance", "--team", "leads")

    carol = User.objects.get(username="carol")
    assert sorted(carol.groups.values_list("name", flat=True)) == ["finance", "leads"]
    assert err == (
        "created team finance\ncreated team leads\n"
        "created user carol (approver); teams: finance, leads\n"
    )
    assert AuditEvent.objects.filter(action="team.created").count() == 2
    assert AuditEvent.objects.filter(action="team.joined").count() == 2

    out, err = forge_user("carol", "--team", "security")

    assert sorted(carol.groups.values_list("name", flat=True)) == ["finance", "leads", "security"]
    assert (
        err
        == "created team security\nupdated user carol (approver); teams: finance, leads, security\n"
    )


def test_a_bad_team_name_is_refused_and_nothing_is_saved():
    with pytest.raises(CommandError, match="is not a team name"):
        forge_user("carol", "--team", "fin ance")

    assert not User.objects.filter(username="carol").exists()


def test_email_sets_the_address_notifications_go_to_and_is_audited(author):
    forge_user(author.username, "--email", " ada@example.com ")

    author.refresh_from_db()
    assert author.email == "ada@example.com"
    event = AuditEvent.objects.filter(action="user.updated").latest("seq")
    assert event.payload["changed"] == ["email"]

    forge_user(author.username, "--email", "")
    author.refresh_from_db()
    assert author.email == ""


def test_an_address_that_is_not_one_is_refused_and_nothing_is_saved(author):
    with pytest.raises(CommandError, match="valid email"):
        forge_user(author.username, "--email", "not an address", "--role", "admin")

    author.refresh_from_db()
    assert (author.email, author.roles) == ("", ["author"])


def test_deactivate_shuts_a_person_out_and_activate_lets_them_in_again(author):
    author.set_password("correct-horse-battery-staple")
    author.save()
    value = forge_user(author.username, "--token")[0].strip()
    login = {"username": author.username, "password": "correct-horse-battery-staple"}

    _, err = forge_user(author.username, "--deactivate")

    assert err == f"updated user {author.username} (author; deactivated)\n"
    assert Client().post("/accounts/login/", login).status_code == 200  # the form again
    me = Client().get("/api/v1/me", headers={"authorization": f"Bearer {value}"})
    assert me.status_code == 401
    event = AuditEvent.objects.filter(action="user.updated").latest("seq")
    assert (event.payload["changed"], event.payload["active"]) == (["active"], False)

    forge_user(author.username, "--activate")

    assert Client().post("/accounts/login/", login).status_code == 302
    me = Client().get("/api/v1/me", headers={"authorization": f"Bearer {value}"})
    assert me.status_code == 200


def test_an_update_without_activate_or_deactivate_leaves_access_alone(author):
    forge_user(author.username, "--role", "approver")

    author.refresh_from_db()
    assert author.is_active is True
