"""The identity provider's endpoints, read from its OpenID Connect discovery document.

Forge is configured with the issuer alone (FORGE_OIDC_ISSUER); the authorization, token,
userinfo and key endpoints come from ``{issuer}/.well-known/openid-configuration``, read
at the first sign-in rather than at start-up, so that a provider that is down stops only
single sign-on (with ``SsoUnavailable`` saying why) and never the site or password login.
A document read is kept for DISCOVERY_TTL_SECONDS per process; a failure is not kept, so
the next attempt tries again.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import httpx

DISCOVERY_PATH = "/.well-known/openid-configuration"
DISCOVERY_TTL_SECONDS = 3600.0


class SsoUnavailable(Exception):
    """Single sign-on cannot start or finish; ``code`` is stable, the message says why."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class ProviderEndpoints:
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    userinfo_endpoint: str
    jwks_uri: str


_REQUIRED = ("authorization_endpoint", "token_endpoint", "userinfo_endpoint", "jwks_uri")

_lock = threading.Lock()
_cache: dict[str, tuple[float, ProviderEndpoints]] = {}


def discovery_url(issuer: str) -> str:
    return issuer.rstrip("/") + DISCOVERY_PATH


def discover(issuer: str, *, timeout: float) -> ProviderEndpoints:
    """The endpoints ``issuer`` publishes; raise SsoUnavailable (sso_issuer_unreachable,
    sso_issuer_invalid) naming the address and the fault."""
    now = time.monotonic()
    with _lock:
        cached = _cache.get(issuer)
    if cached is not None and now - cached[0] < DISCOVERY_TTL_SECONDS:
        return cached[1]
    endpoints = _fetch(issuer, timeout)
    with _lock:
        _cache[issuer] = (now, endpoints)
    return endpoints


def forget() -> None:
    """Drop every kept document (tests; a changed provider is otherwise seen within the TTL)."""
    with _lock:
        _cache.clear()


def _fetch(issuer: str, timeout: float) -> ProviderEndpoints:
    url = discovery_url(issuer)
    try:
        response = httpx.get(url, timeout=timeout, headers={"Accept": "application/json"})
    except httpx.HTTPError as exc:
        raise SsoUnavailable(
            "sso_issuer_unreachable",
            f"the identity provider's discovery document at {url} could not be read: {exc}",
        ) from exc
    if response.status_code != 200:
        raise SsoUnavailable(
            "sso_issuer_unreachable",
            f"the identity provider's discovery document at {url} answered "
            f"HTTP {response.status_code}",
        )
    try:
        document = response.json()
    except ValueError as exc:
        raise SsoUnavailable(
            "sso_issuer_invalid", f"{url} did not answer a JSON discovery document"
        ) from exc
    if not isinstance(document, dict):
        raise SsoUnavailable("sso_issuer_invalid", f"{url} did not answer a JSON object")
    # OpenID Connect Discovery 1.0, section 4.3: the issuer in the document must be the
    # one configured, or tokens it signs would be accepted for another provider.
    published = document.get("issuer")
    if not isinstance(published, str) or published.rstrip("/") != issuer.rstrip("/"):
        raise SsoUnavailable(
            "sso_issuer_invalid",
            f"{url} names the issuer {published!r}, not the configured {issuer!r} "
            "(FORGE_OIDC_ISSUER must be exactly the provider's issuer)",
        )
    missing = [key for key in _REQUIRED if not isinstance(document.get(key), str)]
    if missing:
        raise SsoUnavailable(
            "sso_issuer_invalid", f"{url} lacks {', '.join(missing)}, which Forge needs"
        )
    return ProviderEndpoints(issuer=published, **{key: document[key] for key in _REQUIRED})
