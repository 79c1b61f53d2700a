"""The deployment's approval gate (``forge.runtime.gate``) over stored plan versions.

One signing key per deployment, derived from ``SECRET_KEY`` under its own label, signs
version approvals and step approval tokens alike; rotating ``SECRET_KEY`` therefore
voids every approval not yet used, which is the safe direction. ``version_approval``
reads the approval a version runs under: its latest decision, when that decision is an
approval.
"""

from __future__ import annotations

import hashlib
import hmac
from functools import cache
from typing import TYPE_CHECKING

from django.conf import settings

from forge.runtime import ApprovalSigner
from forge.runtime.gate import POLICY_APPROVER, ApprovalGate, VersionApproval

if TYPE_CHECKING:
    from plans.models import PlanVersion

__all__ = ["approval_signer", "gate", "version_approval"]


@cache
def approval_signer() -> ApprovalSigner:
    # A key of its own, derived from SECRET_KEY, so approvals and sessions never share a
    # key: rotating one does not silently validate the other's signatures.
    key = hmac.new(settings.SECRET_KEY.encode(), b"forge-approval-tokens", hashlib.sha256)
    return ApprovalSigner(key.digest())


def gate() -> ApprovalGate:
    return ApprovalGate(approval_signer())


def version_approval(version: PlanVersion) -> VersionApproval | None:
    """The approval ``version`` runs under (its latest decision, if an approval), as the
    gate checks it; ``None`` when it has none."""
    latest = version.approvals.select_related("reviewer").order_by("-created_at", "-id").first()
    if latest is None or latest.decision != "approved":
        return None
    return VersionApproval(
        plan_id=str(version.plan_id),
        version=version.number,
        content_hash=latest.content_hash,
        author=version.author.get_username(),
        approver=POLICY_APPROVER if latest.by_policy else latest.reviewer_name,
        signature=latest.signature,
        by_policy=latest.by_policy,
    )
