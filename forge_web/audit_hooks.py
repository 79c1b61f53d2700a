"""Every change to accounts, and every login and logout, becomes an audit event.

accounts and audit are siblings that may not import each other, so this module, on
the floor above both, connects accounts' ``account_changed`` signal and Django's
login signals to ``audit.services.record``. The receivers run inside the sender's
transaction, so the audit row commits with the change, or neither does.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.signals import user_logged_in, user_logged_out, user_login_failed
from django.dispatch import receiver

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


@receiver(user_logged_in, dispatch_uid="forge_web.audit_logged_in")
def audit_login(*, user: Any, **kwargs: Any) -> None:
    record(user.get_username(), "user.logged_in", "user", user.pk, {})


@receiver(user_logged_out, dispatch_uid="forge_web.audit_logged_out")
def audit_logout(*, user: Any, **kwargs: Any) -> None:
    if user is not None:  # None when the session had already ended
        record(user.get_username(), "user.logged_out", "user", user.pk, {})


@receiver(user_login_failed, dispatch_uid="forge_web.audit_login_failed")
def audit_login_failure(*, credentials: dict[str, Any], **kwargs: Any) -> None:
    username = str(credentials.get("username", ""))[:150]
    record(ANONYMOUS_ACTOR, "user.login_failed", "user", "", {"username": username})
