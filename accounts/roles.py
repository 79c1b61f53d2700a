"""The roles of SPEC section 7 and what each may do: the one place that says so.

A user holds any set of roles. Every role but ``auditor`` may read (what ``viewer`` may
do); ``admin`` holds every other role as well. An ``auditor`` reads the audit trail (and
walks the chain) and the metrics, and nothing that shows a plan's arguments: not the
plans, runs, tools or review pages, and audit payloads with the arguments hidden
(audit.visibility). Object-level rules stay with the action that needs
them: an approver may approve plan versions, but never one they authored (plans checks).
"""

from __future__ import annotations

from collections.abc import Iterable

VIEWER = "viewer"
AUTHOR = "author"
APPROVER = "approver"
OPERATOR = "operator"
ADMIN = "admin"
AUDITOR = "auditor"

ROLES: tuple[str, ...] = (VIEWER, AUTHOR, APPROVER, OPERATOR, ADMIN, AUDITOR)

DESCRIPTIONS: dict[str, str] = {
    VIEWER: "read plans, runs, tools, metrics and the audit trail",
    AUTHOR: "create plans and edit them into new versions; comment in review threads",
    APPROVER: "approve, reject or request changes of plan versions and approve paused steps "
    "(never their own); comment in review threads",
    OPERATOR: "start, cancel and resume runs, reconcile interrupted steps, walk the audit chain",
    ADMIN: "manage tools, policy and users; holds every other role",
    AUDITOR: "read the audit trail (plan arguments hidden), walk the chain, read metrics",
}

# Permission names are "<object>.<verb>"; server code checks these, never role names,
# so that moving a right from one role to another is a change to this table alone.
PERMISSIONS: dict[str, frozenset[str]] = {
    VIEWER: frozenset(
        {"plan.view", "run.view", "tool.view", "metrics.view", "audit.view", "evaluation.view"}
    ),
    # evaluation.upload: storing a planner's evaluation report (forge eval --report-to)
    # review.comment: review threads on plan versions (open, reply, resolve, reopen)
    AUTHOR: frozenset(
        {"plan.create", "plan.edit", "plan.compile", "evaluation.upload", "review.comment"}
    ),
    APPROVER: frozenset({"plan.approve", "step.approve", "review.comment"}),
    # audit.verify: a full walk reads every row (seconds for a million), so not everyone.
    OPERATOR: frozenset(
        {
            "run.start",
            "run.cancel",
            "run.resume",
            "run.reconcile",
            "audit.verify",
            "evaluation.upload",
        }
    ),  # fmt: skip
    # notification.manage: the webhooks and their delivery log (reviews.webhooks)
    ADMIN: frozenset({"tool.manage", "policy.manage", "user.manage", "notification.manage"}),
    # Not plan.view: whoever may read plans may read their arguments (audit.visibility).
    AUDITOR: frozenset({"audit.view", "audit.verify", "metrics.view"}),
}

ALL_PERMISSIONS: frozenset[str] = frozenset().union(*PERMISSIONS.values())


def effective_roles(roles: Iterable[str]) -> frozenset[str]:
    """The roles a holder of ``roles`` acts with: admin implies all, any role but auditor
    implies viewer."""
    held = frozenset(roles) & frozenset(ROLES)
    if ADMIN in held:
        return frozenset(ROLES)
    if held - {AUDITOR}:
        return held | {VIEWER}
    return held


def permissions_for(roles: Iterable[str]) -> frozenset[str]:
    """Every permission granted by ``roles`` (after ``effective_roles``)."""
    return frozenset().union(*(PERMISSIONS[role] for role in effective_roles(roles)))


def roles_granting(permission: str) -> tuple[str, ...]:
    """The roles whose holders have ``permission``, in ``ROLES`` order."""
    return tuple(role for role in ROLES if permission in permissions_for([role]))


def refusal(permission: str) -> str:
    """What a refusal for want of ``permission`` says: the roles to ask an admin for."""
    granting = roles_granting(permission)
    if len(granting) == 1:
        return f"This needs the {permission} permission, which the {granting[0]} role grants"
    which = f"{', '.join(granting[:-1])} and {granting[-1]}"
    return f"This needs the {permission} permission, which the {which} roles grant"


def validate_roles(roles: Iterable[str]) -> tuple[str, ...]:
    """Return ``roles`` sorted and deduplicated; raise ValueError naming an unknown role."""
    cleaned = sorted(set(roles))
    unknown = [role for role in cleaned if role not in ROLES]
    if unknown:
        raise ValueError(f"unknown role {unknown[0]!r}; roles are {', '.join(ROLES)}")
    return tuple(cleaned)
