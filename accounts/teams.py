"""Teams (SPEC section 10): a team is a Django ``auth.Group``, and a group named T is
team T. Approval rules name teams; a person counts toward a team's rule when they are in
it. The only writers of teams and their members; each change is announced (and so
audited) inside its transaction, as the rest of ``accounts.services`` is.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.db import transaction

from accounts.models import User
from accounts.signals import account_changed

__all__ = [
    "create_team",
    "delete_team",
    "join_teams",
    "set_members",
    "teams_of",
    "validate_team_name",
]

MAX_NAME = 150  # Group.name's length


def validate_team_name(name: str) -> str:
    """``name`` without surrounding spaces; ``ValidationError`` when empty, too long, or
    holding a space, a comma or an ``@`` (the CLI writes ``NAME@team,team``)."""
    cleaned = name.strip()
    if not cleaned or len(cleaned) > MAX_NAME or any(c in cleaned for c in " ,@\t\n\x00"):
        raise ValidationError(
            f"{name!r} is not a team name: 1 to {MAX_NAME} characters, no spaces, commas or @",
            code="invalid_team",
        )
    return cleaned


def teams_of(user: Any) -> tuple[str, ...]:
    """The teams ``user`` is in, sorted; none for an anonymous or inactive user."""
    if not getattr(user, "is_authenticated", False) or not user.is_active:
        return ()
    return user.team_names()  # type: ignore[no-any-return]


def join_teams(user: User, names: Iterable[str], *, actor: str) -> tuple[str, ...]:
    """Add ``user`` to each team of ``names``, creating the teams that are missing;
    returns the teams that were created."""
    wanted = [validate_team_name(name) for name in names]
    created: list[str] = []
    with transaction.atomic():
        for name in dict.fromkeys(wanted):
            group, new = Group.objects.get_or_create(name=name)
            if new:
                created.append(name)
                _announce(actor, "team.created", name, {"team": name, "members": []})
            if not user.groups.filter(pk=group.pk).exists():
                user.groups.add(group)
                _announce(actor, "team.joined", name, {"team": name, "member": user.username})
    user.__dict__.pop("_forge_teams", None)
    return tuple(created)


def create_team(name: str, *, actor: str, members: Iterable[str] = ()) -> Group:
    """A new team with ``members``; ``ValidationError`` (``team_exists``) when one has
    that name, (``unknown_user``) for a member who is not a user: then nothing is saved."""
    cleaned = validate_team_name(name)
    with transaction.atomic():
        group, new = Group.objects.get_or_create(name=cleaned)
        if not new:
            raise ValidationError(f"team {cleaned!r} exists already", code="team_exists")
        _announce(actor, "team.created", cleaned, {"team": cleaned, "members": []})
        set_members(group, members, actor=actor)
    return group


def set_members(group: Group, usernames: Iterable[str], *, actor: str) -> tuple[str, ...]:
    """Make exactly ``usernames`` the members of ``group``; ``ValidationError``
    (``unknown_user``) naming any that is not a user, and nothing changes."""
    wanted = sorted(dict.fromkeys(name.strip() for name in usernames if name.strip()))
    with transaction.atomic():
        users = list(User.objects.filter(username__in=wanted))
        missing = sorted(set(wanted) - {user.username for user in users})
        if missing:
            raise ValidationError(f"no user named {', '.join(missing)}", code="unknown_user")
        before = sorted(group.user_set.values_list("username", flat=True))
        if before != wanted:
            group.user_set.set(users)
            _announce(
                actor,
                "team.members_changed",
                group.name,
                {"team": group.name, "members": wanted, "before": before},
            )
    return tuple(wanted)


def delete_team(group: Group, *, actor: str) -> None:
    with transaction.atomic():
        members = sorted(group.user_set.values_list("username", flat=True))
        name = group.name
        group.delete()
        _announce(actor, "team.deleted", name, {"team": name, "members": members})


def _announce(actor: str, action: str, team: str, payload: dict[str, Any]) -> None:
    account_changed.send(
        sender=User,
        actor=actor,
        action=action,
        object_type="team",
        object_id=team,
        payload=payload,
    )
