"""The one approval gate (SPEC section 5): a plan version executes steps only when a
person other than its author approved it and its document still has the approved
content hash.

Every path that runs steps goes through here: the Scheduler refuses to start or resume
a run without a ``VersionApproval`` this gate clears, and checks it again before it
admits each step, against the graph it is about to run (so a document changed after
its approval, in a database or anywhere else, never reaches a runner). Approvals are
signed with the deployment's approval key, so a row or an event written around the
application cannot pass for one.

The single exception is a deployment policy with ``auto_approve_replans: read_only``
(and never for a replan that adds a tool, a permission scope or a side-effect class the
approved version did not have: ``escalations``, whatever the policy says):
a replan that drops no constraint of the approved version it replaces (plan drift) and
whose added or changed steps only read, with no tool or permission scope the approved
version did not have, continues, approved by ``policy``. Anything else waits for a
person: a drifted replan most of all (seed 003 section 10.2).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from forge.compiler import ExecutableGraph, ExecutableNode
from forge.errors import ForgeError
from forge.plan.drift import detect_drift
from forge.runtime.approvals import ApprovalSigner
from forge.tools import Policy, ToolSpec

__all__ = [
    "POLICY_APPROVER",
    "ApprovalGate",
    "GateRefused",
    "VersionApproval",
    "escalations",
    "replan_needs_person",
]

POLICY_APPROVER = "policy"
_READ_ONLY = frozenset({"none", "read"})


class GateRefused(ForgeError, PermissionError):
    """A version that may not execute steps. ``code``: ``not_approved``,
    ``self_approval``, ``content_changed``, ``approval_invalid``, ``approval_mismatch``,
    or ``needs_person`` (a replan the policy may not approve)."""

    code = "not_approved"


@dataclass(frozen=True)
class VersionApproval:
    """A signed statement: ``approver`` approved version ``version`` of plan
    ``plan_id``, written by ``author``, with exactly the document ``content_hash``."""

    plan_id: str
    version: int
    content_hash: str
    author: str
    approver: str
    signature: str
    by_policy: bool = False

    def fields(self) -> tuple[str, ...]:
        return (
            self.plan_id,
            str(self.version),
            self.content_hash,
            self.author,
            self.approver,
            "policy" if self.by_policy else "person",
        )

    def to_data(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> VersionApproval:
        return cls(
            plan_id=str(data["plan_id"]),
            version=int(data["version"]),
            content_hash=str(data["content_hash"]),
            author=str(data["author"]),
            approver=str(data["approver"]),
            signature=str(data["signature"]),
            by_policy=bool(data.get("by_policy", False)),
        )


class ApprovalGate:
    def __init__(self, signer: ApprovalSigner) -> None:
        self.signer = signer

    def approve(
        self, *, plan_id: str, version: int, content_hash: str, author: str, approver: str
    ) -> VersionApproval:
        """A person's approval; refused (``self_approval``) to the version's author."""
        if approver == author:
            raise GateRefused(
                f"{approver} wrote version {version} and cannot approve it: another person must",
                code="self_approval",
            )
        return self._signed(plan_id, version, content_hash, author, approver, by_policy=False)

    def approve_by_policy(
        self,
        policy: Policy,
        parent: ExecutableGraph,
        child: ExecutableGraph,
        *,
        plan_id: str,
        version: int,
        author: str,
    ) -> VersionApproval:
        """The policy's approval of a replan ``child`` of the approved ``parent``; raises
        ``GateRefused`` (``needs_person``) with every reason it needs a person instead."""
        reasons = replan_needs_person(policy, parent, child)
        if reasons:
            raise GateRefused(
                f"version {version} needs a person's approval: " + "; ".join(reasons),
                code="needs_person",
            )
        return self._signed(
            plan_id, version, child.content_hash, author, POLICY_APPROVER, by_policy=True
        )

    def clear(
        self,
        graph: ExecutableGraph,
        approval: VersionApproval | None,
        *,
        plan_id: str,
        version: int,
    ) -> VersionApproval:
        """``approval`` if it lets ``graph`` (version ``version`` of ``plan_id``) execute
        steps now; raises ``GateRefused`` naming why not."""
        reason = self.refusal(graph, approval, plan_id=plan_id, version=version)
        if reason is not None:
            raise GateRefused(reason[1], code=reason[0])
        assert approval is not None
        return approval

    def refusal(
        self,
        graph: ExecutableGraph,
        approval: VersionApproval | None,
        *,
        plan_id: str,
        version: int,
    ) -> tuple[str, str] | None:
        """Why ``approval`` does not clear ``graph`` (code, message), or ``None``."""
        if approval is None:
            return "not_approved", f"version {version} is not approved"
        if (approval.plan_id, approval.version) != (plan_id, version):
            return (
                "approval_mismatch",
                f"the approval is for version {approval.version} of plan {approval.plan_id}, "
                f"not version {version} of plan {plan_id}",
            )
        if not self.signer.matches(approval.signature, "version", *approval.fields()):
            return "approval_invalid", f"the approval of version {version} has a bad signature"
        if approval.approver == approval.author and not approval.by_policy:
            return (
                "self_approval",
                f"version {version} was approved by its own author, {approval.author}",
            )
        if approval.content_hash != graph.content_hash:
            return (
                "content_changed",
                f"version {version}'s document changed since it was approved "
                f"(approved {approval.content_hash[:12]}, now {graph.content_hash[:12]})",
            )
        return None

    def _signed(
        self,
        plan_id: str,
        version: int,
        content_hash: str,
        author: str,
        approver: str,
        *,
        by_policy: bool,
    ) -> VersionApproval:
        unsigned = VersionApproval(
            plan_id, version, content_hash, author, approver, "", by_policy=by_policy
        )
        signature = self.signer.sign("version", *unsigned.fields())
        return VersionApproval(
            plan_id, version, content_hash, author, approver, signature, by_policy=by_policy
        )


def replan_needs_person(
    policy: Policy, parent: ExecutableGraph, child: ExecutableGraph
) -> tuple[str, ...]:
    """Why the replan ``child`` of the approved ``parent`` may not continue on the
    policy's approval alone; empty when it may.

    A replan that grants itself more than the approved version had (a tool, a permission
    scope or a side-effect class new to the plan) always needs a person, whatever the
    policy says (seed 003 section 9: a planner never grants itself new permissions), so
    those reasons come first and no policy value can waive them."""
    reasons = list(escalations(parent, child))
    if policy.auto_approve_replans != "read_only":
        reasons.append("the policy asks a person to approve every replan")
        return tuple(dict.fromkeys(reasons))
    reasons += [
        f"plan drift: {dropped}" for dropped in detect_drift(parent.document, child.document)
    ]
    for step_id, verb, node in _changed(parent, child):
        for tool in _tools(node):
            effect = node.binding.side_effect if node.binding is not None else tool.side_effect
            if effect not in _READ_ONLY:
                reasons.append(
                    f"it {verb} step {step_id!r}, whose {tool.name} has a {effect} side effect"
                )
    return tuple(dict.fromkeys(reasons))


def escalations(parent: ExecutableGraph, child: ExecutableGraph) -> tuple[str, ...]:
    """What the replan ``child`` grants itself that the approved ``parent`` did not have:
    each added or changed step's tool, permission scope or side-effect class that no step
    of ``parent`` had. Never approved by a policy."""
    known_tools = {tool.name for node in parent.nodes.values() for tool in _tools(node)}
    known_scopes = {
        tool.permission_scope for node in parent.nodes.values() for tool in _tools(node)
    }
    known_effects = {_effect(node, tool) for node in parent.nodes.values() for tool in _tools(node)}
    reasons: list[str] = []
    for step_id, verb, node in _changed(parent, child):
        for tool in _tools(node):
            if tool.name not in known_tools:
                reasons.append(
                    f"it {verb} step {step_id!r} with tool {tool.name!r}, new to the plan"
                )
            if tool.permission_scope not in known_scopes:
                reasons.append(
                    f"it {verb} step {step_id!r} in scope {tool.permission_scope!r}, "
                    "new to the plan"
                )
            effect = _effect(node, tool)
            if effect not in known_effects:
                reasons.append(
                    f"it {verb} step {step_id!r} with a {effect} side effect, new to the plan"
                )
    return tuple(dict.fromkeys(reasons))


def _changed(
    parent: ExecutableGraph, child: ExecutableGraph
) -> list[tuple[str, str, ExecutableNode]]:
    """The steps of ``child`` added or changed from ``parent``, with the verb to say so."""
    changed = []
    for step_id in child.order:
        node = child.nodes[step_id]
        old = parent.nodes.get(step_id)
        if old is not None and old.fingerprint == node.fingerprint:
            continue
        changed.append((step_id, "adds" if old is None else "changes", node))
    return changed


def _effect(node: ExecutableNode, tool: ToolSpec) -> str:
    return node.binding.side_effect if node.binding is not None else tool.side_effect


def _tools(node: ExecutableNode) -> tuple[ToolSpec, ...]:
    if node.binding is not None:
        return (node.binding.tool,)
    return node.allowed_tools
