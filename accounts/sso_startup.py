"""What forge_web.settings checks of single sign-on's settings at start-up.

Imported by the settings of every process, so it is plain functions over strings: no
dataclass, no HTTP client, nothing that costs start-up whether single sign-on is on or
off. ``accounts.sso_settings`` reads the checked values per request.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from accounts.roles import ROLES

SSO_BACKEND = "accounts.sso_backend.SsoBackend"
# Plain HTTP is accepted only for a provider on this machine (a test's, a developer's).
_LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})


def oidc_settings_problem(
    *, issuer: str, client_id: str, client_secret: str, scopes: str, password_login: bool
) -> str | None:
    """Why these settings cannot work, or None; settings.py raises it at start-up."""
    if not issuer:
        if not password_login:
            return (
                "FORGE_PASSWORD_LOGIN=0 needs single sign-on (FORGE_OIDC_ISSUER), "
                "or no one could log in to the pages"
            )
        return None
    parts = urlsplit(issuer)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        return f"FORGE_OIDC_ISSUER must be the provider's https:// URL, not {issuer!r}"
    if parts.scheme == "http" and parts.hostname not in _LOOPBACK:
        return f"FORGE_OIDC_ISSUER must use https:// (plain http only on this machine): {issuer!r}"
    if parts.query or parts.fragment:
        return f"FORGE_OIDC_ISSUER must not have a query or fragment: {issuer!r}"
    if not client_id or not client_secret:
        return (
            "FORGE_OIDC_ISSUER is set: FORGE_OIDC_CLIENT_ID and FORGE_OIDC_CLIENT_SECRET "
            "must be too"
        )
    if "openid" not in scopes.split():
        return f"FORGE_OIDC_SCOPES must include 'openid', not {scopes!r}"
    return None


def parse_role_map(text: str) -> tuple[tuple[str, str], ...]:
    """Read ``group=role,group=role`` (a group may appear more than once); raise ValueError
    naming the entry that is not ``group=role`` or the role Forge does not know."""
    pairs: list[tuple[str, str]] = []
    for entry in (item.strip() for item in text.split(",")):
        if not entry:
            continue
        group, sep, role = (part.strip() for part in entry.partition("="))
        if not sep or not group or not role:
            raise ValueError(f"entry {entry!r} is not group=role")
        if role not in ROLES:
            raise ValueError(
                f"entry {entry!r}: unknown role {role!r}; roles are {', '.join(ROLES)}"
            )
        pairs.append((group, role))
    return tuple(pairs)
