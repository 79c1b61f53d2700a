"""Single sign-on against a real OpenID Connect provider (django-oauth-toolkit's, in its
own process: tests/fixtures/oidc_provider.py), with Django's test client as Forge's
browser and ``requests`` as the person's browser at the provider.

Forge's part is real end to end: discovery, the authorization request with PKCE, the
code exchange, the ID token's signature (the provider's freshly generated RSA key), its
issuer, audience and nonce, the userinfo claims, and what they make of the user.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
import requests
from django.test import Client

from accounts import services
from accounts.models import User
from audit.models import AuditEvent
from tests.fixtures.oidc_provider_process import Provider, running_provider, sso_on

pytestmark = pytest.mark.django_db

CALLBACK = "http://testserver/accounts/sso/callback/"
PEOPLE: dict[str, dict[str, Any]] = {
    "fay": {
        "password": "fay-provider-password",
        "email": "fay@example.com",
        "groups": ["finance", "staff"],
        "forge_roles": ["approver"],
    },
    "lee": {
        "password": "lee-provider-password",
        "email": "lee@example.com",
        "groups": ["leads"],
        "forge_roles": [],
    },
}
HOME = "203.0.113.7"


@pytest.fixture(scope="module")
def provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Provider]:
    with running_provider(tmp_path_factory.mktemp("op"), CALLBACK, PEOPLE) as running:
        yield running


@pytest.fixture
def sso(settings: Any, provider: Provider) -> Provider:
    provider.people(PEOPLE)
    sso_on(settings, provider.issuer)
    return provider


def at_provider(start: Any, username: str, password: str) -> str:
    """Play the person's browser at the provider: from Forge's redirect to its login
    page, sign in, and return where the provider sends the browser back to Forge."""
    assert start.status_code == 302, start.content
    with requests.Session() as browser:
        login_page = browser.get(start["Location"], timeout=10)
        assert login_page.status_code == 200 and "op-username" in login_page.text
        signed_in = browser.post(
            login_page.url,
            data={
                "username": username,
                "password": password,
                "csrfmiddlewaretoken": browser.cookies["op_csrftoken"],
            },
            allow_redirects=False,
            timeout=10,
        )
        assert signed_in.status_code == 302, signed_in.text
        authorized = browser.get(
            requests.compat.urljoin(login_page.url, signed_in.headers["Location"]),
            allow_redirects=False,
            timeout=10,
        )
        assert authorized.status_code == 302, authorized.text
        back = authorized.headers["Location"]
    assert back.startswith(CALLBACK), back
    parts = urlsplit(back)
    return f"{parts.path}?{parts.query}"


def sign_in(client: Client, username: str, *, password: str | None = None) -> Any:
    start = client.get("/accounts/sso/login/")
    back = at_provider(start, username, password or PEOPLE[username]["password"])
    return client.get(back)


def error_code(response: Any) -> str | None:
    found = re.search(r'role="alert" data-code="([a-z_]+)"', response.content.decode())
    return found.group(1) if found else None


def logged_in_as(client: Client) -> str | None:
    user_id = client.session.get("_auth_user_id")
    return User.objects.get(pk=user_id).username if user_id else None


# --- Signing in ---------------------------------------------------------------------


def test_the_first_sign_in_makes_the_user_with_the_providers_teams_and_roles(sso):
    client = Client(REMOTE_ADDR=HOME)
    response = client.get("/accounts/login/")
    assert b"Sign in with SSO" in response.content

    landed = sign_in(client, "fay")

    assert landed.status_code == 302 and landed["Location"] == "/"
    assert logged_in_as(client) == "fay"
    fay = User.objects.get(username="fay")
    assert fay.roles == ["approver"]
    assert fay.team_names() == ("finance", "staff")
    assert fay.email == "fay@example.com"
    assert fay.sso_subject and not fay.has_usable_password()
    home = client.get("/").content.decode()
    assert 'data-teams="finance,staff"' in home  # the user menu's teams
    created = AuditEvent.objects.get(action="user.created", object_id=str(fay.pk))
    assert created.actor == "sso:oidc"
    assert created.payload["teams"] == ["finance", "staff"]
    assert AuditEvent.objects.filter(action="user.logged_in", actor="fay").count() == 1


def test_the_sign_in_returns_to_the_page_that_asked_for_it(sso):
    client = Client(REMOTE_ADDR=HOME)
    asked = client.get("/plans/")
    assert asked.status_code == 302 and "next=/plans/" in asked["Location"]
    start = client.get("/accounts/sso/login/?next=/plans/")
    landed = client.get(at_provider(start, "fay", PEOPLE["fay"]["password"]))
    assert landed["Location"] == "/plans/"


def test_each_sign_in_sets_teams_and_roles_to_what_the_provider_says_now(sso, settings):
    sign_in(Client(REMOTE_ADDR=HOME), "fay")
    subject = User.objects.get(username="fay").sso_subject

    sso.people(
        {
            **PEOPLE,
            "fay": {
                **PEOPLE["fay"],
                "preferred_username": "fay.k",
                "email": "fay.k@example.com",
                "groups": ["leads"],
                "forge_roles": ["operator", "author"],
            },
        }
    )
    client = Client(REMOTE_ADDR=HOME)
    sign_in(client, "fay")

    fay = User.objects.get(sso_subject=subject)  # the same user, found by subject
    assert logged_in_as(client) == "fay.k" == fay.username
    assert fay.roles == ["author", "operator"]
    assert fay.team_names() == ("leads",)
    assert User.objects.count() == 1
    updated = AuditEvent.objects.get(action="user.updated", object_id=str(fay.pk))
    assert set(updated.payload["changed"]) == {"username", "roles", "teams"}


def test_roles_from_a_map_of_groups_and_unknown_role_names_dropped(sso, settings):
    settings.FORGE_OIDC_ROLE_MAP = (("finance", "approver"), ("leads", "operator"))
    sso.people({**PEOPLE, "fay": {**PEOPLE["fay"], "forge_roles": ["author", "payroll-admin"]}})
    sign_in(Client(REMOTE_ADDR=HOME), "fay")
    sign_in(Client(REMOTE_ADDR=HOME), "lee")

    # The claim's and the map's roles together; a role Forge does not know is dropped.
    assert User.objects.get(username="fay").roles == ["approver", "author"]
    assert User.objects.get(username="lee").roles == ["operator"]


def test_without_a_role_claim_or_map_roles_stay_as_an_admin_set_them(sso, settings):
    settings.FORGE_OIDC_ROLE_CLAIM = ""
    sign_in(Client(REMOTE_ADDR=HOME), "fay")
    assert User.objects.get(username="fay").roles == []
    services.save_user("fay", actor="admin", roles=["operator"])

    sign_in(Client(REMOTE_ADDR=HOME), "fay")

    fay = User.objects.get(username="fay")
    assert fay.roles == ["operator"] and fay.team_names() == ("finance", "staff")


def test_a_provider_username_held_by_a_password_user_is_refused(sso, make_user):
    make_user("fay", "admin", password="local-password-1234")
    client = Client(REMOTE_ADDR=HOME)

    response = sign_in(client, "fay")

    assert response.status_code == 409
    assert error_code(response) == "sso_username_taken"
    assert b"belongs to a Forge user who does not sign in with single sign-on" in response.content
    assert logged_in_as(client) is None
    assert User.objects.get(username="fay").sso_subject is None


def test_a_username_another_subject_holds_is_refused(sso):
    sign_in(Client(REMOTE_ADDR=HOME), "lee")
    # The provider now calls fay "lee": a different subject, so a different person.
    sso.people({**PEOPLE, "fay": {**PEOPLE["fay"], "preferred_username": "lee"}})
    client = Client(REMOTE_ADDR=HOME)
    response = sign_in(client, "fay")
    assert response.status_code == 409 and error_code(response) == "sso_username_taken"
    assert b"another person at the identity provider" in response.content
    assert logged_in_as(client) is None and User.objects.count() == 1


def test_a_username_forge_cannot_hold_is_refused_naming_it(sso):
    sso.people({**PEOPLE, "fay": {**PEOPLE["fay"], "preferred_username": "Fay Khan"}})
    client = Client(REMOTE_ADDR=HOME)
    response = sign_in(client, "fay")
    assert response.status_code == 403
    assert error_code(response) == "sso_claim_invalid"
    assert b"&#x27;Fay Khan&#x27; is not a valid Forge username" in response.content
    assert logged_in_as(client) is None


# --- Password login switched off ------------------------------------------------------


def test_password_login_off_hides_the_form_and_refuses_a_password(sso, settings, make_user):
    settings.FORGE_PASSWORD_LOGIN = False
    make_user("ann", "viewer", password="ann-local-password-1234")
    client = Client(REMOTE_ADDR=HOME)

    page = client.get("/accounts/login/").content.decode()
    assert "Sign in with SSO" in page and 'name="password"' not in page

    refused = client.post(
        "/accounts/login/", {"username": "ann", "password": "ann-local-password-1234"}
    )
    assert refused.status_code == 403 and error_code(refused) == "password_login_disabled"
    assert logged_in_as(client) is None

    sign_in(client, "fay")
    assert logged_in_as(client) == "fay"


# --- Off, misconfigured, refused ---------------------------------------------------------


def test_off_by_default_no_button_no_backend_and_the_sso_pages_answer_404(client, settings):
    assert settings.FORGE_OIDC_ISSUER == ""
    assert "accounts.sso_backend.SsoBackend" not in settings.AUTHENTICATION_BACKENDS
    assert b"Sign in with SSO" not in client.get("/accounts/login/").content
    for path in ("/accounts/sso/login/", "/accounts/sso/callback/?code=x&state=y"):
        response = client.get(path)
        assert response.status_code == 404 and error_code(response) == "sso_not_configured"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_an_unreachable_issuer_is_a_clear_error_and_password_login_still_works(settings, make_user):
    issuer = f"http://127.0.0.1:{_closed_port()}/o"
    sso_on(settings, issuer)
    make_user("ann", "viewer", password="ann-local-password-1234")
    client = Client(REMOTE_ADDR=HOME)

    response = client.get("/accounts/sso/login/")

    assert response.status_code == 502 and error_code(response) == "sso_issuer_unreachable"
    assert f"{issuer}/.well-known/openid-configuration could not be read".encode() in (
        response.content
    )
    client.post("/accounts/login/", {"username": "ann", "password": "ann-local-password-1234"})
    assert logged_in_as(client) == "ann"


def test_an_issuer_that_is_not_an_openid_provider_is_a_clear_error(settings, provider):
    sso_on(settings, f"{provider.url}/not-an-issuer")
    response = Client().get("/accounts/sso/login/")
    assert response.status_code == 502 and error_code(response) == "sso_issuer_unreachable"
    assert b"answered HTTP 404" in response.content


def test_a_wrong_client_secret_is_the_providers_refusal_shown(sso, settings):
    settings.FORGE_OIDC_CLIENT_SECRET = "not-the-secret"
    client = Client(REMOTE_ADDR=HOME)
    response = sign_in(client, "fay")
    assert response.status_code == 502 and error_code(response) == "sso_provider_error"
    assert b"invalid_client" in response.content
    assert logged_in_as(client) is None


def test_a_refusal_at_the_provider_is_shown(sso):
    response = Client().get(
        "/accounts/sso/callback/?error=access_denied&error_description=Not+for+you&state=x"
    )
    assert response.status_code == 403 and error_code(response) == "sso_provider_refused"
    assert b"access_denied (Not for you)" in response.content


def test_a_callback_no_sign_in_started_is_refused(sso):
    response = Client().get("/accounts/sso/callback/?code=abc&state=forged")
    assert response.status_code == 400 and error_code(response) == "sso_state_invalid"


def test_a_deactivated_user_cannot_sign_in(sso):
    sign_in(Client(REMOTE_ADDR=HOME), "fay")
    User.objects.filter(username="fay").update(is_active=False)
    client = Client(REMOTE_ADDR=HOME)
    response = sign_in(client, "fay")
    assert response.status_code == 403 and error_code(response) == "sso_user_inactive"
    assert logged_in_as(client) is None


# --- Login throttling -----------------------------------------------------------------


def test_refused_sign_ins_are_counted_by_address_and_lock_it_out(sso, settings, make_user):
    settings.AXES_FAILURE_LIMIT = 2
    make_user("fay", "viewer", password="local-password-1234")  # every sign-in refused
    make_user("ann", "viewer", password="ann-local-password-1234")

    first = sign_in(Client(REMOTE_ADDR=HOME), "fay")
    second = sign_in(Client(REMOTE_ADDR=HOME), "fay")
    assert first.status_code == 409 and second.status_code == 429
    assert b"Too many failed logins for this account or from this address" in second.content

    # The address is locked for passwords too; the account "ann" and other addresses not.
    here = Client(REMOTE_ADDR=HOME)
    here.post("/accounts/login/", {"username": "ann", "password": "ann-local-password-1234"})
    assert logged_in_as(here) is None
    elsewhere = Client(REMOTE_ADDR="198.51.100.9")
    elsewhere.post("/accounts/login/", {"username": "ann", "password": "ann-local-password-1234"})
    assert logged_in_as(elsewhere) == "ann"
    assert AuditEvent.objects.filter(action="user.locked_out").count() == 1
