"""Single sign-on's settings (FORGE_OIDC_*, docs/configuration.md) as one value, read per
request (so a test's settings override takes effect at once); checked at start-up by
``accounts.sso_startup``, which the settings import instead of this module.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from accounts.sso_claims import ClaimMapping


@dataclass(frozen=True)
class SsoSettings:
    issuer: str
    client_id: str
    client_secret: str
    scopes: str
    sign_algo: str
    timeout: float
    mapping: ClaimMapping


def sso_settings() -> SsoSettings | None:
    """The configured provider, or None when single sign-on is off."""
    if not settings.FORGE_OIDC_ISSUER:
        return None
    return SsoSettings(
        issuer=settings.FORGE_OIDC_ISSUER,
        client_id=settings.FORGE_OIDC_CLIENT_ID,
        client_secret=settings.FORGE_OIDC_CLIENT_SECRET,
        scopes=settings.FORGE_OIDC_SCOPES,
        sign_algo=settings.FORGE_OIDC_SIGN_ALGO,
        timeout=settings.FORGE_OIDC_TIMEOUT_SECONDS,
        mapping=ClaimMapping(
            username_claim=settings.FORGE_OIDC_USERNAME_CLAIM,
            groups_claim=settings.FORGE_OIDC_GROUPS_CLAIM,
            role_claim=settings.FORGE_OIDC_ROLE_CLAIM,
            role_map=tuple(settings.FORGE_OIDC_ROLE_MAP),
        ),
    )


def password_login_enabled() -> bool:
    return bool(settings.FORGE_PASSWORD_LOGIN)


def login_methods() -> dict[str, bool]:
    """What the login page offers (its template's ``sso_enabled`` and ``password_login``)."""
    return {
        "sso_enabled": bool(settings.FORGE_OIDC_ISSUER),
        "password_login": password_login_enabled(),
    }
