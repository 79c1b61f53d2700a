"""The parts of single sign-on on their own: reading claims, the settings check at
start-up, and discovery against a small HTTP server that says whatever a test needs."""

from __future__ import annotations

import json
import os
import runpy
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured, SuspiciousOperation
from django.test import RequestFactory

from accounts import sso_discovery
from accounts.sso_backend import SsoBackend
from accounts.sso_claims import ClaimError, ClaimMapping, identity_from_claims
from accounts.sso_discovery import SsoUnavailable, discover
from accounts.sso_startup import oidc_settings_problem, parse_role_map
from tests.fixtures.oidc_provider_process import sso_on

# --- Claims ---------------------------------------------------------------------------

CLAIMS = {"sub": "u-1", "preferred_username": "fay", "email": "fay@example.com"}


def test_teams_are_the_groups_claim_sorted_and_deduplicated():
    identity = identity_from_claims(
        {**CLAIMS, "groups": ["staff", "finance", "staff"]}, ClaimMapping()
    )
    assert identity.teams == ("finance", "staff")
    assert identity.roles is None  # no role claim, no map: the claims do not decide


def test_roles_are_the_claims_and_the_maps_together_known_ones_only():
    mapping = ClaimMapping(
        role_claim="roles", role_map=(("finance", "approver"), ("ops", "operator"))
    )
    identity = identity_from_claims(
        {**CLAIMS, "groups": ["finance"], "roles": "author superuser"}, mapping
    )
    assert identity.roles == ("approver", "author")


def test_a_configured_role_source_with_nothing_in_it_means_no_roles():
    identity = identity_from_claims(CLAIMS, ClaimMapping(role_claim="roles"))
    assert identity.roles == ()


@pytest.mark.parametrize(
    ("claims", "message"),
    [
        ({"preferred_username": "fay"}, "no 'sub'"),
        ({"sub": "u-1"}, "no username in 'preferred_username'"),
        ({**CLAIMS, "groups": {"finance": True}}, "claim 'groups' must be a list"),
        ({**CLAIMS, "groups": ["finance", 7]}, "claim 'groups' holds 7"),
        ({**CLAIMS, "groups": ["x" * 151]}, "longer than 150"),
        ({**CLAIMS, "email": "x" * 250 + "@a.io"}, "claim 'email' is longer than 254"),
    ],
)
def test_claims_that_make_no_user_are_refused_naming_the_claim(claims, message):
    with pytest.raises(ClaimError, match=message) as refused:
        identity_from_claims(claims, ClaimMapping())
    assert refused.value.code == "sso_claim_invalid"


def test_the_role_map_is_read_and_a_bad_entry_named():
    assert parse_role_map(" finance=approver, finance=viewer ,,") == (
        ("finance", "approver"),
        ("finance", "viewer"),
    )
    with pytest.raises(ValueError, match="entry 'finance' is not group=role"):
        parse_role_map("finance")
    with pytest.raises(ValueError, match="unknown role 'boss'"):
        parse_role_map("finance=boss")


# --- Settings at start-up -------------------------------------------------------------

GOOD = {
    "issuer": "https://idp.example.com/realms/forge",
    "client_id": "forge",
    "client_secret": "s3cret",
    "scopes": "openid email profile",
    "password_login": True,
}


def test_settings_that_work_have_no_problem():
    assert oidc_settings_problem(**GOOD) is None
    assert oidc_settings_problem(**{**GOOD, "issuer": "http://127.0.0.1:9000/o"}) is None
    assert oidc_settings_problem(**{**GOOD, "issuer": "", "client_id": ""}) is None


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"issuer": "", "password_login": False}, "FORGE_PASSWORD_LOGIN=0 needs single sign-on"),
        ({"issuer": "idp.example.com"}, "must be the provider's https:// URL"),
        ({"issuer": "http://idp.example.com"}, "must use https://"),
        ({"issuer": "https://idp.example.com/?a=1"}, "must not have a query"),
        ({"client_secret": ""}, "FORGE_OIDC_CLIENT_ID and FORGE_OIDC_CLIENT_SECRET must be"),
        ({"scopes": "email profile"}, "must include 'openid'"),
    ],
)
def test_settings_that_cannot_work_are_refused_at_start_up(change, problem):
    assert problem in (oidc_settings_problem(**{**GOOD, **change}) or "")


# --- Discovery --------------------------------------------------------------------------


class _Answers:
    status = 200
    body: Any = None
    requests = 0


@pytest.fixture
def idp() -> Iterator[tuple[str, type[_Answers]]]:
    answers = type("Answers", (_Answers,), {})

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            answers.requests += 1
            body = answers.body if isinstance(answers.body, bytes) else json.dumps(answers.body)
            data = body if isinstance(body, bytes) else body.encode()
            self.send_response(answers.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    sso_discovery.forget()
    try:
        yield f"http://127.0.0.1:{server.server_port}/realm", answers
    finally:
        server.shutdown()
        server.server_close()
        sso_discovery.forget()


def _document(issuer: str) -> dict[str, str]:
    return {
        "issuer": issuer,
        "authorization_endpoint": f"{issuer}/auth",
        "token_endpoint": f"{issuer}/token",
        "userinfo_endpoint": f"{issuer}/userinfo",
        "jwks_uri": f"{issuer}/jwks",
    }


def test_discovery_reads_the_endpoints_once_and_keeps_them(idp):
    issuer, answers = idp
    answers.body = _document(issuer)
    first = discover(issuer, timeout=5)
    assert first.token_endpoint == f"{issuer}/token"
    assert discover(issuer, timeout=5) == first
    assert answers.requests == 1


def test_a_document_naming_another_issuer_is_refused(idp):
    issuer, answers = idp
    answers.body = _document("https://elsewhere.example.com")
    with pytest.raises(SsoUnavailable, match="names the issuer 'https://elsewhere") as refused:
        discover(issuer, timeout=5)
    assert refused.value.code == "sso_issuer_invalid"


def test_a_document_without_an_endpoint_is_refused_naming_it(idp):
    issuer, answers = idp
    answers.body = {k: v for k, v in _document(issuer).items() if k != "jwks_uri"}
    with pytest.raises(SsoUnavailable, match="lacks jwks_uri") as refused:
        discover(issuer, timeout=5)
    assert refused.value.code == "sso_issuer_invalid"


def test_an_answer_that_is_not_json_is_refused_and_a_failure_not_kept(idp):
    issuer, answers = idp
    answers.body = b"<html>login</html>"
    with pytest.raises(SsoUnavailable, match="did not answer a JSON discovery document"):
        discover(issuer, timeout=5)
    answers.body = _document(issuer)
    assert discover(issuer, timeout=5).issuer == issuer  # tried again, not the failure kept


def test_an_error_status_is_unreachable_with_the_status(idp):
    issuer, answers = idp
    answers.status = 503
    answers.body = {}
    with pytest.raises(SsoUnavailable, match="answered HTTP 503") as refused:
        discover(issuer, timeout=5)
    assert refused.value.code == "sso_issuer_unreachable"


# --- The settings module under the environment ----------------------------------------


def _load_settings(monkeypatch: pytest.MonkeyPatch, **env: str) -> dict[str, Any]:
    for name in list(os.environ):
        if name.startswith("FORGE_OIDC_") or name == "FORGE_PASSWORD_LOGIN":
            monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return runpy.run_path(str(Path(settings.BASE_DIR) / "forge_web" / "settings.py"))


def test_off_by_default_the_backend_is_not_installed(monkeypatch):
    values = _load_settings(monkeypatch)
    assert values["FORGE_OIDC_ISSUER"] == "" and values["FORGE_PASSWORD_LOGIN"] is True
    assert "accounts.sso_backend.SsoBackend" not in values["AUTHENTICATION_BACKENDS"]


def test_an_issuer_installs_the_backend_after_the_throttle(monkeypatch):
    values = _load_settings(
        monkeypatch,
        FORGE_OIDC_ISSUER="https://login.example.com/realms/acme",
        FORGE_OIDC_CLIENT_ID="forge",
        FORGE_OIDC_CLIENT_SECRET="s3cret",
        FORGE_OIDC_ROLE_MAP="finance=approver",
        FORGE_PASSWORD_LOGIN="0",
    )
    assert values["AUTHENTICATION_BACKENDS"][0] == "axes.backends.AxesStandaloneBackend"
    assert values["AUTHENTICATION_BACKENDS"][-1] == "accounts.sso_backend.SsoBackend"
    assert values["FORGE_OIDC_ROLE_MAP"] == (("finance", "approver"),)
    assert values["FORGE_PASSWORD_LOGIN"] is False


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"FORGE_PASSWORD_LOGIN": "0"}, "FORGE_PASSWORD_LOGIN=0 needs single sign-on"),
        ({"FORGE_OIDC_ISSUER": "https://idp.example.com"}, "FORGE_OIDC_CLIENT_ID and"),
        ({"FORGE_OIDC_ROLE_MAP": "finance"}, "FORGE_OIDC_ROLE_MAP: entry 'finance'"),
        ({"FORGE_OIDC_SIGN_ALGO": "none"}, "FORGE_OIDC_SIGN_ALGO"),
    ],
)
def test_settings_that_cannot_work_stop_the_process_naming_the_setting(monkeypatch, env, message):
    with pytest.raises(ImproperlyConfigured, match=message):
        _load_settings(monkeypatch, **env)


# --- The ID token's issuer and audience (which the library leaves unchecked) ----------


@pytest.fixture
def signed(settings: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """``signed(**claims)``: an RS256 ID token by a key of the test's, which the backend
    is given as the provider's (the library's key lookup is the one thing replaced)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    sso_on(settings, "https://idp.example.com/realm")
    monkeypatch.setattr(SsoBackend, "retrieve_matching_jwk", lambda self, token: key.public_key())

    def sign(**claims: Any) -> str:
        now = int(time.time())
        payload = {
            "iss": "https://idp.example.com/realm",
            "aud": settings.FORGE_OIDC_CLIENT_ID,
            "sub": "u-1",
            "nonce": "n-1",
            "iat": now,
            "exp": now + 300,
            **claims,
        }
        return jwt.encode(payload, key, algorithm="RS256")

    return sign


def test_a_token_for_this_client_from_this_issuer_is_accepted(signed, settings):

    backend = SsoBackend()
    assert backend.verify_token(signed(), nonce="n-1")["sub"] == "u-1"
    both = signed(aud=["another-app", settings.FORGE_OIDC_CLIENT_ID])
    assert backend.verify_token(both, nonce="n-1")["sub"] == "u-1"


@pytest.mark.parametrize(
    ("claims", "message"),
    [
        ({"iss": "https://evil.example.com/realm"}, "issuer is 'https://evil.example.com"),
        ({"aud": "another-app"}, "not for this client"),
        ({"aud": ["another-app"]}, "not for this client"),
        ({"nonce": "n-2"}, "Nonce"),
    ],
)
def test_a_token_from_another_issuer_for_another_client_or_sign_in_is_refused(
    signed, claims, message
):

    with pytest.raises(SuspiciousOperation, match=message):
        SsoBackend().verify_token(signed(**claims), nonce="n-1")


def test_the_backend_answers_only_a_callback_and_never_asks_the_provider_for_passwords(
    settings,
):
    # An issuer nothing answers at: any call to it would raise, not return None.
    sso_on(settings, "http://127.0.0.1:9/o")
    request = RequestFactory().post("/accounts/login/?code=c&state=s")
    assert SsoBackend().authenticate(request, username="ann", password="pw") is None
