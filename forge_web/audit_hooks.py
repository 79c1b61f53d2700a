"""Every change to accounts, and every login and logout, becomes an audit event.

accounts and audit are siblings that may not import each other, so this module, on
the floor above both, connects accounts' ``account_changed`` signal and Django's
login signals to ``audit.services.record``, and django-oauth-toolkit's
``app_authorized`` (an MCP host got a token to act as a person: ``oauth.token_issued``).
The receivers run inside the sender's transaction, so the audit row commits with the
change, or neither does.

Login throttling (django-axes, settings "Login throttling") decides before these
receivers run: axes is installed before forge_web, so its ``user_login_failed`` receiver
is connected, and called, first. A failed login is then one of three events:
``user.login_failed`` (a wrong username or password, counted, with the larger of the
account's and the address's counts), followed by ``user.locked_out`` when that failure
reached the limit, or ``user.login_refused`` (an attempt during a lockout: refused
before any password was checked, and not counted). No event holds a password: Django
masks it in ``credentials`` and only the username is read.
"""

from __future__ import annotations

from typing import Any

from axes.helpers import get_client_ip_address
from django.conf import settings
from django.contrib.auth.signals import user_logged_in, user_logged_out, user_login_failed
from django.dispatch import receiver
from django.http import HttpRequest
from oauth2_provider.signals import app_authorized

from accounts.signals import account_changed
from audit.services import record

ANONYMOUS_ACTOR = "web:anonymous"


@receiver(account_changed, dispatch_uid="forge_web.audit_account_changed")
def audit_account_change(
    *,
    actor: str,
    action: str,
    object_type: str,
    object_id: str,
    payload: dict[str, Any],
    **kwargs: Any,
) -> None:
    record(actor, action, object_type, object_id, payload)


@receiver(app_authorized, dispatch_uid="forge_web.audit_oauth_token_issued")
def audit_oauth_token(*, token: Any, request: HttpRequest | None = None, **kwargs: Any) -> None:
    """An MCP host got an access token to act as a person (MCP authorization), by the
    person's consent or a refresh of it: who, which host, what scope, until when."""
    if token.user is None:  # never: Forge's server issues user tokens only
        return
    application = token.application
    record(
        token.user.get_username(),
        "oauth.token_issued",
        "oauth_application",
        "" if application is None else application.client_id,
        {
            "client_name": "" if application is None else application.name,
            "scope": token.scope,
            "expires": token.expires.isoformat(),
            "ip_address": _address(request),
        },
    )


@receiver(user_logged_in, dispatch_uid="forge_web.audit_logged_in")
def audit_login(*, user: Any, request: HttpRequest | None = None, **kwargs: Any) -> None:
    record(
        user.get_username(), "user.logged_in", "user", user.pk, {"ip_address": _address(request)}
    )


@receiver(user_logged_out, dispatch_uid="forge_web.audit_logged_out")
def audit_logout(*, user: Any, **kwargs: Any) -> None:
    if user is not None:  # None when the session had already ended
        record(user.get_username(), "user.logged_out", "user", user.pk, {})


@receiver(user_login_failed, dispatch_uid="forge_web.audit_login_failed")
def audit_login_failure(
    *, credentials: dict[str, Any], request: HttpRequest | None = None, **kwargs: Any
) -> None:
    who = {
        "username": str(credentials.get("username", ""))[:150],
        "ip_address": _address(request),
    }
    locked_out = bool(getattr(request, "axes_locked_out", False))
    # axes counts a failure (and sets the count) unless the attempt came during a lockout.
    failures = getattr(request, "axes_failures_since_start", None)
    if locked_out and failures is None:
        record(ANONYMOUS_ACTOR, "user.login_refused", "user", "", who)
        return
    record(ANONYMOUS_ACTOR, "user.login_failed", "user", "", {**who, "failures": failures})
    if locked_out:
        lockout = {
            "failure_limit": settings.AXES_FAILURE_LIMIT,
            "cool_off_seconds": int(settings.AXES_COOLOFF_TIME.total_seconds()),
        }
        record(ANONYMOUS_ACTOR, "user.locked_out", "user", "", {**who, **lockout})


def _address(request: HttpRequest | None) -> str | None:
    """The client address the throttle counts (None for a login made without a request,
    such as the test client's ``force_login``)."""
    if request is None or "REMOTE_ADDR" not in request.META:
        return None
    return get_client_ip_address(request)
