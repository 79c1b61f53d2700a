"""Approval rules change under four eyes (SPEC section 10): an admin's change is a new
rules version, stored with its text, diffable against the rules in force and audited as
``rules.changed``; it takes effect only when a second admin approves it
(``rules.approved``). A bad text is refused with its line and field and nothing is
stored; the rules in force stay as they are.
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import Group
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from accounts.permissions import ensure_permission
from audit.services import record
from forge.errors import ForgeError
from forge.people import same_person
from forge.rules.reader import read_rules
from plans.models import RulesStatus, RulesVersion
from plans.rules import rules_in_force

__all__ = ["RulesChangeRefused", "approve_rules", "propose_rules", "rules_diff", "text_in_force"]

PERMISSION = "policy.manage"


class RulesChangeRefused(ForgeError, ValueError):
    """A rules version that cannot be approved: ``rules_not_proposed`` (decided already)."""

    code = "rules_not_proposed"


def text_in_force() -> str:
    """The text of the rules in force: the newest approved version's, else the file's,
    else nothing (four eyes alone)."""
    number, rules = rules_in_force()
    if number:
        return RulesVersion.objects.get(number=number).text
    path = str(getattr(settings, "FORGE_APPROVAL_RULES", "") or "")
    if path:
        return Path(path).read_text(encoding="utf-8")
    return json.dumps(rules.to_data(), indent=2) + "\n"


def rules_diff(version: RulesVersion) -> list[str]:
    """What ``version`` changes in the rules in force, as unified diff lines."""
    return list(
        difflib.unified_diff(
            text_in_force().splitlines(),
            version.text.splitlines(),
            "in force",
            f"version {version.number}",
            lineterm="",
        )
    )


def propose_rules(text: str, user: Any, comment: str = "") -> RulesVersion:
    """Store ``text`` as a new rules version waiting for a second admin; raises
    ``RulesInvalid`` (line and field) for a bad document or an unknown team."""
    ensure_permission(user, PERMISSION)
    teams = set(Group.objects.values_list("name", flat=True))
    rules = read_rules(text, teams=teams)
    with transaction.atomic():
        number = (RulesVersion.objects.select_for_update().aggregate(n=Max("number"))["n"] or 0) + 1
        version = RulesVersion.objects.create(
            number=number, text=text, data=rules.to_data(), proposed_by=user, comment=comment
        )
        record(user.get_username(), "rules.changed", "rules", number, {
            "number": number, "comment": comment, "rules": rules.to_data(),
            "diff": rules_diff(version), "status": RulesStatus.PROPOSED,
        })  # fmt: skip
    return version


def approve_rules(version: RulesVersion, user: Any, comment: str = "") -> RulesVersion:
    """A second admin puts ``version`` in force (the one before it, and any other waiting
    one, superseded). Never its own proposer (403); its teams are checked again."""
    ensure_permission(user, PERMISSION)
    if same_person(user.get_username(), version.proposed_by.get_username()):
        raise PermissionDenied("Rules changes need a second admin: you proposed this version")
    read_rules(version.text, teams=set(Group.objects.values_list("name", flat=True)))
    with transaction.atomic():
        locked = RulesVersion.objects.select_for_update().get(pk=version.pk)
        if locked.status != RulesStatus.PROPOSED:
            raise RulesChangeRefused(f"rules version {locked.number} is {locked.status}")
        before, _ = rules_in_force()
        RulesVersion.objects.exclude(pk=locked.pk).filter(
            status__in=[RulesStatus.IN_FORCE, RulesStatus.PROPOSED], number__lt=locked.number
        ).update(status=RulesStatus.SUPERSEDED)
        locked.status = RulesStatus.IN_FORCE
        locked.approved_by = user
        locked.approved_at = timezone.now()
        locked.save(update_fields=["status", "approved_by", "approved_at"])
        record(user.get_username(), "rules.approved", "rules", locked.number, {
            "number": locked.number, "replaces": before, "comment": comment,
            "proposed_by": locked.proposed_by.get_username(),
        })  # fmt: skip
    return locked


def versions_view() -> list[dict[str, Any]]:
    """The rules versions, newest first, each with its diff when it waits."""
    rows = RulesVersion.objects.select_related("proposed_by", "approved_by")
    return [
        {
            "number": row.number,
            "status": row.status,
            "proposed_by": row.proposed_by.get_username(),
            "approved_by": row.approved_by.get_username() if row.approved_by else None,
            "comment": row.comment,
            "created_at": row.created_at,
            "text": row.text,
            "diff": rules_diff(row) if row.status == RulesStatus.PROPOSED else [],
        }
        for row in rows[:50]
    ]
