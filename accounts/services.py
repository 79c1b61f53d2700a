"""The only writers of users' roles and API tokens; each change announces itself.

Every function here saves inside ``transaction.atomic()`` and sends
``accounts.signals.account_changed`` inside that transaction (see that module).
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.password_validation import validate_password
from django.db import transaction
from django.utils import timezone

from accounts import tokens
from accounts.models import ApiToken, User
from accounts.roles import validate_roles
from accounts.signals import account_changed


def _announce(
    actor: str, action: str, object_type: str, object_id: object, payload: dict[str, Any]
) -> None:
    account_changed.send(
        sender=User,
        actor=actor,
        action=action,
        object_type=object_type,
        object_id=str(object_id),
        payload=payload,
    )


def save_user(
    username: str,
    *,
    actor: str,
    roles: list[str] | None = None,
    password: str | None = None,
) -> tuple[User, bool]:
    """Create ``username`` or update it; return (user, created).

    ``roles`` replaces the held roles when given (None keeps them); ``password`` sets the
    password when given. A new user without a password cannot log in with one (API
    tokens only). Raises ValueError for an unknown role, Django's ValidationError for a
    bad username or a password the validators refuse.
    """
    cleaned = list(validate_roles(roles)) if roles is not None else None
    with transaction.atomic():
        user = User.objects.select_for_update().filter(username=username).first()
        created = user is None
        if user is None:
            User.username_validator(username)
            user = User(username=username)
            user.set_unusable_password()
        changed: list[str] = []
        if cleaned is not None and (created or cleaned != user.roles):
            user.roles = cleaned
            changed.append("roles")
        if password is not None:
            validate_password(password, user)
            user.set_password(password)
            changed.append("password")
        if created or changed:
            user.save()
            _announce(
                actor,
                "user.created" if created else "user.updated",
                "user",
                user.pk,
                {"username": user.username, "roles": list(user.roles), "changed": changed},
            )
    return user, created


def create_token(user: User, name: str, *, actor: str) -> tuple[ApiToken, str]:
    """Create an API token for ``user``; return it and its value, which is never kept."""
    new = tokens.generate()
    with transaction.atomic():
        token = ApiToken.objects.create(user=user, name=name, prefix=new.prefix, digest=new.digest)
        _announce(actor, "token.created", "api_token", token.pk, token.describe())
    return token, new.value


def revoke_token(token: ApiToken, *, actor: str) -> ApiToken:
    """Revoke ``token`` (at once; a revoked token never authenticates). Idempotent."""
    with transaction.atomic():
        locked = ApiToken.objects.select_for_update().select_related("user").get(pk=token.pk)
        if locked.revoked_at is None:
            locked.revoked_at = timezone.now()
            locked.save(update_fields=["revoked_at"])
            _announce(actor, "token.revoked", "api_token", locked.pk, locked.describe())
    return locked
