"""Pages: login and logout, the login wall, the token page, and the page security headers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.test import Client

from accounts import tokens as token_format
from accounts.models import ApiToken
from audit.models import AuditEvent

pytestmark = pytest.mark.django_db

PASSWORD = "correct-horse-battery-staple"
TEMPLATES = Path(django_settings.BASE_DIR) / "templates"


def actions():
    return list(AuditEvent.objects.values_list("actor", "action"))


# --- Login and logout -------------------------------------------------------------------


def test_the_login_page_renders_a_form(anonymous_client):
    response = anonymous_client.get("/accounts/login/")

    assert response.status_code == 200
    assert b'name="username"' in response.content and b'name="password"' in response.content
    assert b'name="csrfmiddlewaretoken"' in response.content


def test_logging_in_redirects_home_and_is_audited(make_user):
    make_user("alice", "viewer", password=PASSWORD)
    client = Client()

    response = client.post("/accounts/login/", {"username": "alice", "password": PASSWORD})

    assert response.status_code == 302
    assert response["Location"] == "/"
    assert actions() == [("alice", "user.logged_in")]


def test_logging_in_returns_to_the_page_asked_for(make_user):
    make_user("alice", "viewer", password=PASSWORD)

    response = Client().post(
        "/accounts/login/", {"username": "alice", "password": PASSWORD, "next": "/accounts/tokens/"}
    )

    assert response["Location"] == "/accounts/tokens/"


def test_a_wrong_password_shows_an_error_and_is_audited_without_the_password(make_user):
    make_user("alice", "viewer", password=PASSWORD)

    response = Client().post("/accounts/login/", {"username": "alice", "password": "wrong-guess"})

    assert response.status_code == 200
    assert b"Please enter a correct username and password" in response.content
    event = AuditEvent.objects.get()
    assert (event.actor, event.action, event.payload) == (
        "web:anonymous",
        "user.login_failed",
        {"username": "alice", "ip_address": "127.0.0.1", "failures": 1},
    )
    assert "wrong-guess" not in event.hash + str(event.payload)


def test_a_login_post_without_csrf_token_is_refused(make_user, anonymous_client):
    make_user("alice", "viewer", password=PASSWORD)

    response = anonymous_client.post(
        "/accounts/login/", {"username": "alice", "password": PASSWORD}
    )

    assert response.status_code == 403
    assert "_auth_user_id" not in anonymous_client.session


def test_logging_out_takes_a_post_ends_the_session_and_is_audited(viewer):
    client = Client()
    client.force_login(viewer)

    refused = client.get("/accounts/logout/")
    response = client.post("/accounts/logout/")

    assert refused.status_code == 405
    assert response.status_code == 302
    assert response["Location"] == "/accounts/login/"
    assert client.get("/").status_code == 302
    assert actions() == [("viewer", "user.logged_in"), ("viewer", "user.logged_out")]


# --- The login wall ---------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/", "/accounts/tokens/"])
def test_pages_redirect_the_anonymous_to_login(anonymous_client, path):
    response = anonymous_client.get(path)

    assert response.status_code == 302
    assert response["Location"] == f"/accounts/login/?next={path}"


def test_the_topbar_shows_the_user_and_a_logout_form(client, viewer):
    client.force_login(viewer)

    content = client.get("/").content.decode()

    assert '<span class="user" title="viewer">viewer</span>' in content
    assert re.search(r'<form class="inline" method="post" action="/accounts/logout/">', content)


# --- The token page ---------------------------------------------------------------------


def test_the_token_page_shows_a_new_token_once_and_stores_its_digest(client, author):
    client.force_login(author)

    created = client.post("/accounts/tokens/", {"name": "laptop"})
    later = client.get("/accounts/tokens/")

    assert created.status_code == 201
    value = created.context["new_token"]
    prefix, secret = token_format.parse(value)
    assert value.encode() in created.content
    assert "no-store" in created["Cache-Control"]
    token = ApiToken.objects.get(user=author)
    assert (token.name, token.prefix, token.digest) == (
        "laptop",
        prefix,
        token_format.digest(secret),
    )
    assert secret.encode() not in later.content
    assert f"forge_{prefix}_".encode() in later.content


def test_a_token_needs_a_name(client, author):
    client.force_login(author)

    response = client.post("/accounts/tokens/", {"name": ""})

    assert response.status_code == 400
    assert ApiToken.objects.count() == 0


def test_revoking_a_token_on_the_page(client, author, token_for):
    token_for(author, "old")
    token = ApiToken.objects.get()
    client.force_login(author)

    response = client.post(f"/accounts/tokens/{token.pk}/revoke/")

    assert response.status_code == 302
    token.refresh_from_db()
    assert token.revoked_at is not None
    assert b"revoked" in client.get("/accounts/tokens/").content


def test_a_user_cannot_revoke_someone_elses_token_on_the_page(client, author, stranger, token_for):
    token_for(author, "theirs")
    token = ApiToken.objects.get()
    client.force_login(stranger)

    response = client.post(f"/accounts/tokens/{token.pk}/revoke/")

    assert response.status_code == 404
    token.refresh_from_db()
    assert token.revoked_at is None


def test_revoking_takes_a_post(client, author, token_for):
    token_for(author)
    client.force_login(author)

    assert client.get(f"/accounts/tokens/{ApiToken.objects.get().pk}/revoke/").status_code == 405


# --- Security headers and templates -----------------------------------------------------


def test_pages_carry_a_strict_content_security_policy(anonymous_client):
    response = anonymous_client.get("/accounts/login/")

    assert response["Content-Security-Policy"] == (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "font-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; "
        "frame-ancestors 'none'; form-action 'self'"
    )
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"


def test_no_template_has_an_inline_script_or_event_handler():
    offenders = []
    for template in sorted(TEMPLATES.rglob("*.html")):
        text = template.read_text()
        for tag in re.findall(r"<script\b[^>]*>", text, flags=re.IGNORECASE):
            if "src=" not in tag and 'type="application/json"' not in tag:
                offenders.append(f"{template.name}: {tag}")
        offenders += [f"{template.name}: {m}" for m in re.findall(r"\son[a-z]+\s*=", text)]
        offenders += [f"{template.name}: javascript:" for _ in re.findall(r"javascript:", text)]
    assert offenders == []
