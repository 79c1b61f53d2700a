"""The deployment's approval gate (``forge.runtime.gate``) over stored plan versions.

One signing key per deployment, derived from ``SECRET_KEY`` under its own label, signs
version approvals and step approval tokens alike; rotating ``SECRET_KEY`` therefore
voids every approval not yet used, which is the safe direction. ``version_approval``
reads the approval a version runs under: its latest decision, when that decision is an
approval, with the approvals given since the version's latest stop, which the gate
judges together under the deployment's approval rules (``plans.rules``).
"""

from __future__ import annotations

import hashlib
import hmac
from functools import cache
from typing import TYPE_CHECKING

from django.conf import settings

from forge.runtime import ApprovalSigner
from forge.runtime.gate import POLICY_APPROVER, ApprovalGate, VersionApproval
from plans.rules import approvals_in_force, current_rules

if TYPE_CHECKING:
    from plans.models import Approval, PlanVersion

__all__ = ["approval_signer", "gate", "version_approval"]


@cache
def approval_signer() -> ApprovalSigner:
    # A key of its own, derived from SECRET_KEY, so approvals and sessions never share a
    # key: rotating one does not silently validate the other's signatures.
    key = hmac.new(settings.SECRET_KEY.encode(), b"forge-approval-tokens", hashlib.sha256)
    return ApprovalSigner(key.digest())


def gate() -> ApprovalGate:
    """The gate under the deployment's approval rules as they are now."""
    return ApprovalGate(approval_signer(), current_rules())


def version_approval(version: PlanVersion) -> VersionApproval | None:
    """The approval ``version`` runs under (its latest decision, if an approval), as the
    gate checks it, carrying the other approvals given since its latest stop (the rules
    count them together); ``None`` when it has none."""
    counted, stop = approvals_in_force(version)
    if stop is not None or not counted:
        return None
    latest, earlier = counted[-1], counted[:-1]
    return _approval(version, latest).with_others(
        _approval(version, row) for row in earlier if not row.by_policy
    )


def _approval(version: PlanVersion, row: Approval) -> VersionApproval:
    return VersionApproval(
        plan_id=str(version.plan_id),
        version=version.number,
        content_hash=row.content_hash,
        author=version.author.get_username(),
        approver=POLICY_APPROVER if row.by_policy else row.reviewer_name,
        signature=row.signature,
        by_policy=row.by_policy,
        teams=tuple(row.teams),
    )
