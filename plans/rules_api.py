"""The approval rules over the API (SPEC section 10), for admins (``policy.manage``): the
rules in force and their versions, a change (a new version, 201, waiting for a second
admin; a bad text 400 with its code, line and field), and a second admin's approval.

No ``from __future__ import annotations`` here: ninja reads the operations' annotations
at runtime.
"""

from typing import Any

from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from ninja import Field, Router, Schema, Status

from accounts.permissions import require_permission
from plans import rules_changes
from plans.models import RulesVersion
from plans.rules import current_rules, rules_in_force

router = Router(tags=["rules"])


class RulesIn(Schema):
    text: str = Field(description="a forge.rules/v1 document, YAML or JSON", max_length=200_000)
    comment: str = Field(default="", max_length=4_000)


class RulesVersionOut(Schema):
    number: int
    status: str = Field(description="proposed, in_force or superseded")
    proposed_by: str
    approved_by: str | None
    comment: str
    text: str
    diff: list[str] = Field(description="against the rules in force, while it waits")


class RulesOut(Schema):
    in_force: int = Field(description="the rules version in force; 0: the file or four eyes")
    rules: dict[str, Any] = Field(description="the rules in force, as data")
    versions: list[RulesVersionOut]


@router.get("/rules", response=RulesOut)
@require_permission("policy.manage")
def get_rules(request: HttpRequest) -> dict[str, Any]:
    number, _ = rules_in_force()
    return {
        "in_force": number,
        "rules": current_rules().to_data(),
        "versions": rules_changes.versions_view(),
    }


@router.post("/rules", response={201: RulesVersionOut})
@require_permission("policy.manage")
def propose_rules(request: HttpRequest, body: RulesIn) -> Status:
    version = rules_changes.propose_rules(body.text, request.auth, body.comment)
    return Status(201, _one(version.number))


@router.post("/rules/{number}/approve", response=RulesVersionOut)
@require_permission("policy.manage")
def approve_rules(request: HttpRequest, number: int, body: RulesIn | None = None) -> Any:
    version = get_object_or_404(RulesVersion, number=number)
    rules_changes.approve_rules(version, request.auth, "" if body is None else body.comment)
    return _one(number)


def _one(number: int) -> dict[str, Any]:
    return next(v for v in rules_changes.versions_view() if v["number"] == number)
