"""What an identity provider's claims say about a person: a username, teams and roles.

Pure functions over the claims dict (the userinfo answer, which mozilla-django-oidc has
already fetched with a verified ID token's access token). Nothing here touches the
database; ``accounts.services.save_sso_user`` writes what ``identity_from_claims`` read.

Teams come from the groups claim, each group one team (a Django ``auth.Group`` of that
name). Roles come from the role claim, the role map, or both (their union); when
neither is configured the claims say nothing about roles (``roles`` is None) and Forge
keeps the roles an admin gave. A role the claim names that Forge does not know is
dropped, not refused: an identity provider serves many applications, and another's
roles are no error of the person's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from accounts.roles import ROLES

# auth.Group.name and AbstractUser.username are at most 150 characters.
MAX_NAME_LENGTH = 150
MAX_EMAIL_LENGTH = 254  # AbstractUser.email


class ClaimError(ValueError):
    """The claims cannot make a Forge user; ``code`` is stable, the message names the claim."""

    code = "sso_claim_invalid"


@dataclass(frozen=True)
class ClaimMapping:
    """Which claims hold what (settings FORGE_OIDC_*_CLAIM and FORGE_OIDC_ROLE_MAP)."""

    username_claim: str = "preferred_username"
    groups_claim: str = "groups"
    role_claim: str = ""  # empty: roles do not come from a claim
    role_map: tuple[tuple[str, str], ...] = ()  # (group, role): members of group hold role

    @property
    def sets_roles(self) -> bool:
        return bool(self.role_claim or self.role_map)


@dataclass(frozen=True)
class SsoIdentity:
    subject: str
    username: str
    email: str
    teams: tuple[str, ...]
    roles: tuple[str, ...] | None  # None: the claims do not decide roles


def _names(claims: Mapping[str, Any], claim: str) -> tuple[str, ...]:
    """A claim holding a list of names, or one space-separated string (as some providers
    send roles); absent means none."""
    value = claims.get(claim)
    if value is None:
        return ()
    if isinstance(value, str):
        items: list[Any] = value.split()
    elif isinstance(value, list | tuple):
        items = list(value)
    else:
        raise ClaimError(f"claim {claim!r} must be a list of names, not {type(value).__name__}")
    names = []
    for item in items:
        if not isinstance(item, str) or not item.strip():
            raise ClaimError(f"claim {claim!r} holds {item!r}, which is not a name")
        if len(item) > MAX_NAME_LENGTH:
            raise ClaimError(f"claim {claim!r} holds a name longer than {MAX_NAME_LENGTH}")
        names.append(item.strip())
    return tuple(sorted(set(names)))


def identity_from_claims(claims: Mapping[str, Any], mapping: ClaimMapping) -> SsoIdentity:
    subject = claims.get("sub")
    if not isinstance(subject, str) or not subject:
        raise ClaimError("the claims have no 'sub' (the provider's id of the person)")
    username = claims.get(mapping.username_claim)
    if not isinstance(username, str) or not username.strip():
        raise ClaimError(f"the claims have no username in {mapping.username_claim!r}")
    if len(username.strip()) > MAX_NAME_LENGTH:
        raise ClaimError(f"claim {mapping.username_claim!r} is longer than {MAX_NAME_LENGTH}")
    email = claims.get("email")
    if isinstance(email, str) and len(email) > MAX_EMAIL_LENGTH:
        raise ClaimError(f"claim 'email' is longer than {MAX_EMAIL_LENGTH}")
    teams = _names(claims, mapping.groups_claim)
    roles: tuple[str, ...] | None = None
    if mapping.sets_roles:
        held = set(_names(claims, mapping.role_claim)) if mapping.role_claim else set()
        held.update(role for group, role in mapping.role_map if group in teams)
        roles = tuple(sorted(held & set(ROLES)))
    return SsoIdentity(
        subject=subject,
        username=username.strip(),
        email=email if isinstance(email, str) else "",
        teams=teams,
        roles=roles,
    )
