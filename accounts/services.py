"""The only writers of users' roles and API tokens; each change announces itself.

Every function here saves inside ``transaction.atomic()`` and sends
``accounts.signals.account_changed`` inside that transaction (see that module).
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import Group
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.utils import timezone

from accounts import tokens
from accounts.models import ApiToken, User
from accounts.roles import validate_roles
from accounts.signals import account_changed
from accounts.sso_claims import ClaimError, SsoIdentity

SSO_ACTOR = "sso:oidc"


class SsoUsernameTaken(Exception):
    """The provider's username belongs to a Forge user it is not linked to."""

    code = "sso_username_taken"


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
    email: str | None = None,
    active: bool | None = None,
) -> tuple[User, bool]:
    """Create ``username`` or update it; return (user, created).

    ``roles`` replaces the held roles when given (None keeps them); ``password`` sets the
    password when given; ``email`` sets the address notifications are e-mailed to ("" to
    remove it); ``active=False`` shuts the person out (sign-in, sessions, tokens and open
    sockets refuse them; their history stays), ``True`` lets them in again. A new user
    without a password cannot log in with one (API tokens only).
    Raises ValueError for an unknown role, Django's ValidationError for a bad username, a
    password the validators refuse or an address that is not one.
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
        if email is not None and email.strip() != user.email:
            if email.strip():
                validate_email(email.strip())
            user.email = email.strip()
            changed.append("email")
        if active is not None and active != user.is_active:
            user.is_active = active
            changed.append("active")
        if created or changed:
            user.save()
            _announce(
                actor,
                "user.created" if created else "user.updated",
                "user",
                user.pk,
                {"username": user.username, "roles": list(user.roles), "changed": changed,
                 **({"active": user.is_active} if "active" in changed else {})},
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


def save_sso_user(identity: SsoIdentity) -> User:
    """The user the provider's ``identity`` is, created or brought up to date at sign-in.

    Found by the provider's subject, never by username: a provider that sends the name of
    a password user not yet linked to it is refused (SsoUsernameTaken), not let in as
    them. At every sign-in the username and e-mail follow the provider, the user's teams
    (auth groups, created as needed) become exactly its groups claim, and its roles
    become what the claims say when a role claim or map is configured (``roles`` None:
    kept as an admin set them). A superuser flag is never given or taken. Raises
    ClaimError for a username Django would refuse.
    """
    try:
        User.username_validator(identity.username)
    except ValidationError as exc:
        raise ClaimError(
            f"the provider's username {identity.username!r} is not a valid Forge username: "
            + " ".join(exc.messages)
        ) from exc
    with transaction.atomic():
        user = User.objects.select_for_update().filter(sso_subject=identity.subject).first()
        created = user is None
        holder = (
            User.objects.filter(username=identity.username)
            .exclude(sso_subject=identity.subject)
            .first()
        )
        if holder is not None:
            whose = (
                "a Forge user who does not sign in with single sign-on"
                if holder.sso_subject is None
                else "another person at the identity provider (another subject)"
            )
            raise SsoUsernameTaken(
                f"the username {identity.username!r} belongs to {whose}; "
                "an admin must rename or remove that user first"
            )
        if user is None:
            user = User(sso_subject=identity.subject, roles=[])
            user.set_unusable_password()
        changed: list[str] = []
        if user.username != identity.username:
            user.username = identity.username
            changed.append("username")
        if user.email != identity.email:
            user.email = identity.email
            changed.append("email")
        if identity.roles is not None and list(identity.roles) != list(user.roles):
            user.roles = list(identity.roles)
            changed.append("roles")
        if created or changed:
            user.save()
        teams = [Group.objects.get_or_create(name=name)[0] for name in identity.teams]
        held = sorted(user.groups.values_list("name", flat=True))
        if held != list(identity.teams):
            user.groups.set(teams)
            changed.append("teams")
        if created or changed:
            _announce(
                SSO_ACTOR,
                "user.created" if created else "user.updated",
                "user",
                user.pk,
                {
                    "username": user.username,
                    "roles": list(user.roles),
                    "teams": list(identity.teams),
                    "changed": changed,
                },
            )
    return user
