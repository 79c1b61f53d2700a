"""The authentication backend of single sign-on: mozilla-django-oidc's, told Forge's way.

The library does the OpenID Connect work: it exchanges the code (with PKCE) at the token
endpoint, checks the ID token's signature against the provider's published keys and its
nonce, and reads the userinfo endpoint. Forge adds what the library leaves to its users:
the ID token's issuer and audience are checked (the library checks neither), the
userinfo's subject must be the ID token's, and the person is found by that subject and
brought up to date by accounts.services.save_sso_user (username, teams, roles).

A refusal the person should read (claims that make no Forge user, a username taken) is
kept on the request as ``sso_failure`` for the callback view to show; the backend then
answers None, so that Django counts a failed login (django-axes included).
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import SuspiciousOperation
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from accounts import services
from accounts.models import User
from accounts.sso_claims import ClaimError, identity_from_claims
from accounts.sso_oidc import oidc_setting
from accounts.sso_settings import sso_settings


class SsoFailure(Exception):
    """A sign-in the provider vouched for but Forge refuses; ``code`` is stable."""

    def __init__(self, code: str, message: str, status: int) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status


class SsoBackend(OIDCAuthenticationBackend):  # type: ignore[misc]
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # The library's own __init__ reads every endpoint at once; Django builds a backend
        # for every authenticate() call, password logins included, which must not wait on
        # (or fail with) the provider. The endpoints are read when a callback needs them.
        self.UserModel = User

    get_settings = staticmethod(oidc_setting)

    # The library reads these as attributes; properties make each a fresh read of the
    # settings (and of discovery, for the endpoints) when the callback uses it.
    @property
    def OIDC_OP_TOKEN_ENDPOINT(self) -> str:
        return str(oidc_setting("OIDC_OP_TOKEN_ENDPOINT"))

    @property
    def OIDC_OP_USER_ENDPOINT(self) -> str:
        return str(oidc_setting("OIDC_OP_USER_ENDPOINT"))

    @property
    def OIDC_OP_JWKS_ENDPOINT(self) -> str:
        return str(oidc_setting("OIDC_OP_JWKS_ENDPOINT"))

    @property
    def OIDC_RP_CLIENT_ID(self) -> str:
        return str(oidc_setting("OIDC_RP_CLIENT_ID"))

    @property
    def OIDC_RP_CLIENT_SECRET(self) -> str:
        return str(oidc_setting("OIDC_RP_CLIENT_SECRET"))

    @property
    def OIDC_RP_SIGN_ALGO(self) -> str:
        return str(oidc_setting("OIDC_RP_SIGN_ALGO"))

    OIDC_RP_IDP_SIGN_KEY = None  # always the provider's published keys (jwks_uri)

    def authenticate(self, request: Any, **kwargs: Any) -> User | None:
        # Only the callback view passes a nonce: a password login (whose credentials
        # Django offers every backend) is none of this backend's business.
        if request is None or "nonce" not in kwargs or sso_settings() is None:
            return None
        try:
            user: User | None = super().authenticate(request, **kwargs)
        except SuspiciousOperation as exc:
            # A token that fails its checks: counted as a failed login, like a bad password.
            request.sso_failure = SsoFailure("sso_token_invalid", str(exc), 403)
            return None
        except SsoFailure as failure:
            request.sso_failure = failure
            return None
        # The provider down or answering errors (SsoUnavailable, requests' errors) is no
        # one's failed login: those propagate to the callback view uncounted.
        return user

    def verify_token(self, token: str, **kwargs: Any) -> dict[str, Any]:
        payload: dict[str, Any] = super().verify_token(token, **kwargs)
        sso = sso_settings()
        assert sso is not None  # authenticate() returned before this when off
        issuer = payload.get("iss")
        if not isinstance(issuer, str) or issuer.rstrip("/") != sso.issuer.rstrip("/"):
            raise SuspiciousOperation(f"the ID token's issuer is {issuer!r}, not {sso.issuer!r}")
        audience = payload.get("aud")
        audiences = [audience] if isinstance(audience, str) else audience
        if not isinstance(audiences, list) or sso.client_id not in audiences:
            raise SuspiciousOperation(f"the ID token is not for this client ({audience!r})")
        return payload

    def get_or_create_user(self, access_token: str, id_token: str, payload: Any) -> User:
        sso = sso_settings()
        assert sso is not None
        claims = self.get_userinfo(access_token, id_token, payload)
        # OpenID Connect Core 5.3.2: userinfo about anyone else must not be used.
        if claims.get("sub") != payload.get("sub"):
            raise SsoFailure(
                "sso_claim_invalid", "the provider's userinfo is about another subject", 403
            )
        try:
            identity = identity_from_claims(claims, sso.mapping)
            return services.save_sso_user(identity)
        except ClaimError as exc:
            raise SsoFailure(exc.code, str(exc), 403) from exc
        except services.SsoUsernameTaken as exc:
            raise SsoFailure(exc.code, str(exc), 409) from exc
