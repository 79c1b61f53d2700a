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

Who must approve is judged here too (SPEC section 10): the gate holds the deployment's
approval rules (``forge.rules``), and a person's approval clears a version only when,
with the other people's approvals it carries (``others``, each signed on its own), it
satisfies every rule that matches the version's compiled impact; each approval names
the approver's teams when they gave it, signed with it. A replan that matches a rule
with a team or more than one approval never passes on the policy's approval. Without
rules (``FOUR_EYES``) one person other than the author is enough, as before rules.

Four eyes are judged here, and only here (``same_person``): for a version's approval
(``approve``, ``refusal``), for each decision on a run's step or milestone, which the
Scheduler refuses to the version's author (``refuse_self_decision``), and for a held
gateway call, which its caller never decides (``refuse_self_decision``,
``call_judgement``). Names are compared
as people write them, without surrounding spaces and regardless of case, so ``ADA`` and
`` ada`` are Ada; a decision needs a named person on each side (``unnamed_person``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from forge.compiler import ExecutableGraph, ExecutableNode, impact_of
from forge.compiler.impact import call_host
from forge.errors import ForgeError
from forge.people import same_person
from forge.plan.drift import detect_drift
from forge.rules import FOUR_EYES, Approver, Judgement, Rule, RuleSet, Subject, judge
from forge.runtime.approvals import ApprovalSigner
from forge.tools import HARMLESS, Policy, ToolSpec

__all__ = [
    "POLICY_APPROVER",
    "ApprovalGate",
    "AuthorCannotDecide",
    "GateRefused",
    "VersionApproval",
    "escalations",
    "refuse_self_decision",
    "replan_needs_person",
    "same_person",
]

POLICY_APPROVER = "policy"


class GateRefused(ForgeError, PermissionError):
    """A version that may not execute steps. ``code``: ``not_approved``,
    ``self_approval``, ``unnamed_person``, ``content_changed``, ``approval_invalid``,
    ``approval_mismatch``, ``needs_person`` (a replan the policy may not approve) or
    ``rules_unsatisfied`` (the approval rules ask for more people, or other teams)."""

    code = "not_approved"


class AuthorCannotDecide(GateRefused):
    """A person deciding on a step or milestone of the version they wrote
    (``self_approval``): a matter of who they are (403 on the web), not of the run."""

    code = "self_approval"


def _named(name: str, role: str) -> None:
    if not name.strip():
        raise GateRefused(f"the {role} must be a named person", code="unnamed_person")


def refuse_self_decision(actor: str, author: str, what: str) -> None:
    """Raise ``AuthorCannotDecide`` (``self_approval``) when ``actor`` wrote the version
    whose ``what`` (a step, a milestone) they decide on; ``GateRefused``
    (``unnamed_person``) for no name."""
    _named(actor, "person deciding")
    if same_person(actor, author):
        raise AuthorCannotDecide(
            f"{actor.strip()} wrote this version and cannot decide on {what}: another person must",
            code="self_approval",
        )


@dataclass(frozen=True)
class VersionApproval:
    """A signed statement: ``approver`` (in ``teams`` when they approved) approved
    version ``version`` of plan ``plan_id``, written by ``author``, with exactly the
    document ``content_hash``. ``others`` are other people's approvals of the same
    version counted with it under the approval rules, each signed on its own."""

    plan_id: str
    version: int
    content_hash: str
    author: str
    approver: str
    signature: str
    by_policy: bool = False
    teams: tuple[str, ...] = ()
    others: tuple[VersionApproval, ...] = ()

    def fields(self) -> tuple[str, ...]:
        base = (
            self.plan_id,
            str(self.version),
            self.content_hash,
            self.author,
            self.approver,
            "policy" if self.by_policy else "person",
        )
        # Teams are signed only when there are some, so approvals signed before teams
        # existed still verify.
        return (*base, ",".join(self.teams)) if self.teams else base

    def approvers(self) -> tuple[Approver, ...]:
        """Every person's approval this one carries, as the rules count them."""
        return tuple(Approver(a.approver, a.teams) for a in (self, *self.others))

    def with_others(self, others: Iterable[VersionApproval]) -> VersionApproval:
        return VersionApproval(
            self.plan_id, self.version, self.content_hash, self.author, self.approver,
            self.signature, self.by_policy, self.teams, tuple(others),
        )  # fmt: skip

    def to_data(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "plan_id": self.plan_id,
            "version": self.version,
            "content_hash": self.content_hash,
            "author": self.author,
            "approver": self.approver,
            "signature": self.signature,
            "by_policy": self.by_policy,
        }
        if self.teams:
            data["teams"] = list(self.teams)
        if self.others:
            data["others"] = [other.to_data() for other in self.others]
        return data

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
            teams=tuple(str(team) for team in data.get("teams", ())),
            others=tuple(cls.from_data(other) for other in data.get("others", ())),
        )


class ApprovalGate:
    def __init__(self, signer: ApprovalSigner, rules: RuleSet = FOUR_EYES) -> None:
        self.signer = signer
        self.rules = rules

    def approve(
        self,
        *,
        plan_id: str,
        version: int,
        content_hash: str,
        author: str,
        approver: str,
        teams: Sequence[str] = (),
    ) -> VersionApproval:
        """A person's approval, in ``teams``; refused (``self_approval``) to the
        version's author."""
        _named(author, "version's author")
        _named(approver, "approver")
        if same_person(approver, author):
            raise GateRefused(
                f"{approver} wrote version {version} and cannot approve it: another person must",
                code="self_approval",
            )
        return self._signed(
            plan_id, version, content_hash, author, approver, by_policy=False, teams=tuple(teams)
        )

    def judgement(
        self,
        graph: ExecutableGraph,
        *,
        author: str,
        approvals: Iterable[Approver],
        stopped: str | None = None,
    ) -> Judgement:
        """The rules that match ``graph`` (a version), each with who counts toward it."""
        subject = Subject.of_impact(impact_of(graph))
        return judge(self.rules, subject, author=author, approvals=approvals, stopped=stopped)

    def step_judgement(
        self, node: ExecutableNode, *, author: str, approvals: Iterable[Approver]
    ) -> Judgement:
        """The rules that match one step waiting for its approval, with who counts."""
        return judge(self.rules, Subject.of_step(node), author=author, approvals=approvals)

    def call_judgement(
        self, subject: Subject, *, caller: str, approvals: Iterable[Approver]
    ) -> Judgement:
        """The rules that match a held gateway call (``subject``), each with who counts
        toward it; the caller never does, as an author never counts for their version."""
        return judge(self.rules, subject, author=caller, approvals=approvals)

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
        reasons = replan_needs_person(policy, parent, child, self.rules)
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
        if same_person(approval.approver, approval.author) and not approval.by_policy:
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
        for other in approval.others:
            if (
                (other.plan_id, other.version, other.content_hash, other.author)
                != (approval.plan_id, approval.version, approval.content_hash, approval.author)
                or other.by_policy
                or not self.signer.matches(other.signature, "version", *other.fields())
            ):
                return (
                    "approval_invalid",
                    f"{other.approver}'s approval of version {version} is not one of this "
                    "version's content, or has a bad signature",
                )
        return self._rules_refusal(graph, approval, version)

    def _rules_refusal(
        self, graph: ExecutableGraph, approval: VersionApproval, version: int
    ) -> tuple[str, str] | None:
        if self.rules == FOUR_EYES and not approval.others:
            return None  # one person other than the author: checked above
        if approval.by_policy:
            # The rules may have changed since the policy approved: judged again.
            needs = _needs_people(self.rules, graph)
            if needs:
                return (
                    "needs_person",
                    f"version {version} needs a person's approval: " + "; ".join(needs),
                )
            return None
        judgement = self.judgement(graph, author=approval.author, approvals=approval.approvers())
        if judgement.satisfied:
            return None
        return (
            "rules_unsatisfied",
            f"version {version} is not approved under the approval rules: "
            + "; ".join(judgement.lacking()),
        )

    def _signed(
        self,
        plan_id: str,
        version: int,
        content_hash: str,
        author: str,
        approver: str,
        *,
        by_policy: bool,
        teams: tuple[str, ...] = (),
    ) -> VersionApproval:
        unsigned = VersionApproval(
            plan_id, version, content_hash, author, approver, "", by_policy=by_policy, teams=teams
        )
        signature = self.signer.sign("version", *unsigned.fields())
        return VersionApproval(
            plan_id,
            version,
            content_hash,
            author,
            approver,
            signature,
            by_policy=by_policy,
            teams=teams,
        )


def replan_needs_person(
    policy: Policy,
    parent: ExecutableGraph,
    child: ExecutableGraph,
    rules: RuleSet = FOUR_EYES,
) -> tuple[str, ...]:
    """Why the replan ``child`` of the approved ``parent`` may not continue on the
    policy's approval alone; empty when it may.

    A replan that grants itself more than the approved version had (a tool, a permission
    scope, a side-effect class or a host new to the plan) always needs a person,
    whatever the policy says (seed 003 section 9: a planner never grants itself new
    permissions), and so does one that matches an approval rule asking for a team or
    more than one person (SPEC section 10), so those reasons come first and no policy
    value can waive them."""
    reasons = list(escalations(parent, child)) + list(_needs_people(rules, child))
    if policy.auto_approve_replans != "read_only":
        reasons.append("the policy asks a person to approve every replan")
        return tuple(dict.fromkeys(reasons))
    reasons += [
        f"plan drift: {dropped}" for dropped in detect_drift(parent.document, child.document)
    ]
    for step_id, verb, node in _changed(parent, child):
        for tool in _tools(node):
            effect = node.binding.side_effect if node.binding is not None else tool.side_effect
            if effect not in HARMLESS:
                reasons.append(
                    f"it {verb} step {step_id!r}, whose {tool.name} has a {effect} side effect"
                )
    return tuple(dict.fromkeys(reasons))


def _needs_people(rules: RuleSet, graph: ExecutableGraph) -> tuple[str, ...]:
    """The rules matching ``graph`` that no policy may stand in for, in words."""
    if rules == FOUR_EYES:
        return ()
    matching = rules.matching(Subject.of_impact(impact_of(graph)))
    return tuple(_asks(rule) for rule in matching if rule.require.needs_people())


def _asks(rule: Rule) -> str:
    count = rule.require.approvals
    who = f"of {rule.require.team}" if rule.require.team else "people"
    return f"it matches approval rule {rule.id!r}, which needs {count} {who}"


def escalations(parent: ExecutableGraph, child: ExecutableGraph) -> tuple[str, ...]:
    """What the replan ``child`` grants itself that the approved ``parent`` did not have:
    each added or changed step's tool, permission scope, side-effect class or HTTP host
    that no step of ``parent`` had. Never approved by a policy."""
    known_tools = {tool.name for node in parent.nodes.values() for tool in _tools(node)}
    known_scopes = {
        tool.permission_scope for node in parent.nodes.values() for tool in _tools(node)
    }
    known_effects = {_effect(node, tool) for node in parent.nodes.values() for tool in _tools(node)}
    known_hosts = {_host(node) for node in parent.nodes.values()}
    reasons: list[str] = []
    for step_id, verb, node in _changed(parent, child):
        host = _host(node)
        if host is not None and host not in known_hosts:
            reasons.append(f"it {verb} step {step_id!r} calling host {host!r}, new to the plan")
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


def _host(node: ExecutableNode) -> str | None:
    binding = node.binding
    if binding is None or binding.tool.name != "http_request":
        return None
    host = call_host(binding.args.get("url"))
    return None if host is None else host.lower()


def _effect(node: ExecutableNode, tool: ToolSpec) -> str:
    return node.binding.side_effect if node.binding is not None else tool.side_effect


def _tools(node: ExecutableNode) -> tuple[ToolSpec, ...]:
    if node.binding is not None:
        return (node.binding.tool,)
    return node.allowed_tools
