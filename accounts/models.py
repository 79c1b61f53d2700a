"""Forge's user, with roles, and the API tokens users create for scripts."""

from __future__ import annotations

import hmac
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractUser
from django.db import models
from django.utils import timezone

from accounts import roles as role_names
from accounts import tokens


class User(AbstractUser):
    """A person or a script's identity. ``roles`` lists the roles held (see accounts.roles).

    Roles are a short JSON list on the row rather than Django groups: they are read on
    every request, so they come with the user at no extra query, and there are five.
    A superuser acts as an admin.
    """

    roles = models.JSONField(default=list, blank=True)
    # The identity provider's "sub" for a user who signs in with single sign-on: the
    # link between the two, stable where the username the provider sends may change.
    # Null for every other user; a password user is never taken over by a provider that
    # sends the same username (accounts.services.save_sso_user refuses it).
    sso_subject = models.CharField(max_length=255, unique=True, null=True, blank=True)

    def effective_roles(self) -> frozenset[str]:
        if not self.is_active:
            return frozenset()
        held = list(self.roles) + ([role_names.ADMIN] if self.is_superuser else [])
        return role_names.effective_roles(held)

    def has_role(self, role: str) -> bool:
        """True if the user acts with ``role`` (admin implies all; any role implies viewer)."""
        if role not in role_names.ROLES:
            raise ValueError(f"unknown role {role!r}")
        return role in self.effective_roles()

    def permissions(self) -> frozenset[str]:
        return role_names.permissions_for(self.effective_roles())

    def can(self, permission: str) -> bool:
        """True if one of the user's roles grants ``permission`` (e.g. "plan.approve")."""
        if permission not in role_names.ALL_PERMISSIONS:
            raise ValueError(f"unknown permission {permission!r}")
        return permission in self.permissions()

    def refusal(self, permission: str) -> str:
        """Why this user may not do what ``permission`` allows: the roles that grant it.
        (Apps that may not import accounts, such as audit, ask the user.)"""
        return role_names.refusal(permission)

    def team_names(self) -> tuple[str, ...]:
        """The teams (``auth.Group``s, ``accounts.teams``) this user is in, sorted; read
        once per user object."""
        cached = self.__dict__.get("_forge_teams")
        if cached is None:
            cached = tuple(sorted(self.groups.values_list("name", flat=True)))
            self.__dict__["_forge_teams"] = cached
        return cached  # type: ignore[no-any-return]

    def set_roles(self, roles: list[str] | tuple[str, ...]) -> None:
        """Replace the held roles (validated, sorted); the caller saves."""
        self.roles = list(role_names.validate_roles(roles))


class ApiTokenQuerySet(models.QuerySet["ApiToken"]):
    def active(self) -> ApiTokenQuerySet:
        return self.filter(revoked_at__isnull=True, user__is_active=True)

    def authenticate(self, value: str) -> ApiToken | None:
        """The live token ``value`` names, or None (unknown, wrong secret, revoked)."""
        parsed = tokens.parse(value)
        if parsed is None:
            return None
        prefix, secret = parsed
        token = self.active().select_related("user").filter(prefix=prefix).first()
        if token is None or not hmac.compare_digest(token.digest, tokens.digest(secret)):
            return None
        token.touch()
        return token


class ApiToken(models.Model):
    """A bearer token for the API. The secret is shown once; only its digest is kept."""

    # last_used_at is written at most this often, so that a busy script does not turn
    # every read into a write.
    TOUCH_INTERVAL = timedelta(minutes=1)

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=12, unique=True)
    digest = models.CharField(max_length=64)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.name} (forge_{self.prefix}_…)"

    @property
    def is_revoked(self) -> bool:
        return self.revoked_at is not None

    def touch(self) -> None:
        now = timezone.now()
        if self.last_used_at is None or now - self.last_used_at >= self.TOUCH_INTERVAL:
            ApiToken.objects.filter(pk=self.pk).update(last_used_at=now)
            self.last_used_at = now

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "prefix": self.prefix, "user": self.user.get_username()}
