"""The teams router (SPEC section 10), for admins (``user.manage``): list teams with
their members, create one, set its members, delete it.

No ``from __future__ import annotations`` here: ninja reads the operations' annotations
at runtime.
"""

from typing import Any

from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError
from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import Field, Router, Schema, Status
from ninja.errors import HttpError

from accounts import teams
from accounts.permissions import require_permission

router = Router(tags=["teams"])


class TeamOut(Schema):
    name: str
    members: list[str] = Field(description="usernames, sorted")


class TeamIn(Schema):
    name: str = Field(min_length=1, max_length=teams.MAX_NAME)
    members: list[str] = Field(default_factory=list, description="usernames")


class MembersIn(Schema):
    members: list[str] = Field(description="usernames: exactly the team's members after")


def _out(group: Group) -> dict[str, Any]:
    members = sorted(group.user_set.values_list("username", flat=True))
    return {"name": group.name, "members": members}


def _refused(error: ValidationError) -> HttpError:
    refusal = HttpError(422, " ".join(error.messages))
    refusal.code = error.code or "invalid_team"  # type: ignore[attr-defined]
    return refusal


@router.get("/teams", response=list[TeamOut])
@require_permission("user.manage")
def list_teams(request: HttpRequest) -> list[dict[str, Any]]:
    return [_out(group) for group in Group.objects.order_by("name").prefetch_related("user_set")]


@router.post("/teams", response={201: TeamOut})
@require_permission("user.manage")
def create_team(request: HttpRequest, body: TeamIn) -> Status:
    actor = request.auth.get_username()  # type: ignore[attr-defined]
    try:
        group = teams.create_team(body.name, actor=actor, members=body.members)
    except ValidationError as error:
        raise _refused(error) from None
    return Status(201, _out(group))


@router.put("/teams/{name}/members", response=TeamOut)
@require_permission("user.manage")
def set_members(request: HttpRequest, name: str, body: MembersIn) -> dict[str, Any]:
    group = get_object_or_404(Group, name=name)
    try:
        teams.set_members(group, body.members, actor=request.auth.get_username())  # type: ignore[attr-defined]
    except ValidationError as error:
        raise _refused(error) from None
    return _out(group)


@router.delete("/teams/{name}", response={204: None})
@require_permission("user.manage")
def delete_team(request: HttpRequest, name: str) -> Status:
    group = get_object_or_404(Group, name=name)
    teams.delete_team(group, actor=request.auth.get_username())  # type: ignore[attr-defined]
    return Status(204, None)
