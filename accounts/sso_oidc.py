"""What mozilla-django-oidc is told: its OIDC_* settings, answered from Forge's.

Forge's settings say it the deployment's way (FORGE_OIDC_ISSUER and friends); the library
asks for OIDC_* names through ``get_settings``, which Forge's subclasses of its backend
and views (accounts.sso_backend, accounts.sso_views) route here. So each value has one
source, and a test that changes FORGE_OIDC_* changes everything the library sees.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from accounts.sso_discovery import discover
from accounts.sso_settings import sso_settings

# The library's names for the provider's endpoints, and where discovery keeps each.
_ENDPOINTS = {
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
}


def oidc_setting(attr: str, *default: Any) -> Any:
    """What mozilla-django-oidc's ``get_settings(attr)`` answers under Forge.

    Endpoints come from discovery (which may raise SsoUnavailable); the rest from
    FORGE_OIDC_*, with PKCE and the nonce always on and the library's own user
    creation replaced by accounts.services.save_sso_user."""
    sso = sso_settings()
    if sso is None:
        raise LookupError("single sign-on is off (FORGE_OIDC_ISSUER is empty)")
    if attr in _ENDPOINTS:
        return getattr(discover(sso.issuer, timeout=sso.timeout), _ENDPOINTS[attr])
    values: dict[str, Any] = {
        "OIDC_RP_CLIENT_ID": sso.client_id,
        "OIDC_RP_CLIENT_SECRET": sso.client_secret,
        "OIDC_RP_SIGN_ALGO": sso.sign_algo,
        "OIDC_RP_IDP_SIGN_KEY": None,
        "OIDC_RP_SCOPES": sso.scopes,
        "OIDC_USE_NONCE": True,
        "OIDC_USE_PKCE": True,
        "OIDC_TIMEOUT": sso.timeout,
        "OIDC_AUTHENTICATION_CALLBACK_URL": "sso-callback",
        "OIDC_ALLOW_UNSECURED_JWT": False,
        "OIDC_STORE_ACCESS_TOKEN": False,
        "OIDC_STORE_ID_TOKEN": False,
        "OIDC_TOKEN_USE_BASIC_AUTH": False,
    }
    if attr in values:
        return values[attr]
    return getattr(settings, attr, *default)
