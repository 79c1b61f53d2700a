"""The only writer of plans, versions and approvals; each action audited in its transaction.

Every version is compiled by the deployment's compiler (``plans.compilation``) when it
is saved, and stores the diagnostics, whether any is an error, and its review status:

- ``has_errors`` when the compiler found an error (it can be neither approved nor run),
- else ``awaiting_approval`` when submitted (the default), or ``draft`` until
  ``submit_version``.

Submitting a version (saving it submitted, or submitting a draft) supersedes every
older version of its plan still awaiting approval: each becomes ``superseded``, names
the new version (``superseded_by``), leaves the review queue and can be neither decided
nor run (409 ``superseded``). Drafts, versions with errors and decided versions keep
their status. A draft older than a version already submitted cannot be submitted (409
``superseded``): its author saves it again as a new version.

Review: any holder of ``plan.approve`` except the version's author may approve, reject
or request changes of a submitted version, with a comment; a version with compile errors
cannot be approved. "Changes requested" sends the version back to its author: like a
rejection it cannot run, and the author answers with a new version. Every decision is
kept as an ``Approval`` and the version's status is the latest decision, so a second
approval is recorded and changes nothing, and a rejection after an approval makes the
version ``rejected`` (as an approval after a rejection makes it ``approved`` again). A
new version never inherits a decision: it starts over. An approval records the content
hash of the document as the reviewer saw it, signed by the approval gate
(``plans.gate``), which is what lets the version run. The deployment policy approves a
read-only replan itself (``approve_by_policy``), recorded as ``policy``.

Audit: every event is filed under its plan (``object_type="plan"``, ``object_id`` the
plan's id), so ``GET /api/v1/audit?object_type=plan&object_id=ID`` is a plan's whole
history; payloads name the version by number and its content hash and count the
diagnostics. They never hold the document or tool arguments, which may hold secrets.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.db.models import QuerySet

from accounts.permissions import ensure_permission
from accounts.teams import teams_of
from audit.services import record
from forge.compiler import CompileResult, ExecutableGraph, PerformedSideEffect
from forge.plan import ImportWarning, PlanDocument, content_hash, diff_plans, dump_plan, to_data
from forge.redaction import redact_text
from forge.runtime.gate import POLICY_APPROVER, GateRefused
from plans import compilation, signals
from plans import gate as plan_gate
from plans.errors import (
    UnknownVersion,
    VersionHasErrors,
    VersionNotSubmitted,
    VersionSuperseded,
)
from plans.layout import layout_for
from plans.models import Approval, Decision, Plan, PlanVersion, VersionStatus
from plans.rules import rules_in_force, version_judgement

if TYPE_CHECKING:
    from forge.toolbox import ServerStatus

__all__ = [
    "approve",
    "approve_by_policy",
    "create_plan",
    "create_version",
    "diff_versions",
    "export_version",
    "performed_side_effects_for",
    "refresh_tools",
    "reject",
    "request_changes",
    "submit_version",
]

AUDIT_OBJECT = "plan"


def create_plan(
    user: Any,
    name: str,
    document: PlanDocument,
    *,
    source_format: str = "json",
    note: str = "",
    planner: str = "editor",
    submit: bool = True,
    import_warnings: Iterable[ImportWarning] = (),
) -> PlanVersion:
    """Create a plan and its version 1, compiled; return the version (``.plan`` is set).
    ``import_warnings`` (what reading its source text warned of) are stored among its
    diagnostics."""
    result = compilation.compile_document(document).noting(import_warnings)
    with transaction.atomic():
        plan = Plan.objects.create(name=name, created_by=user)
        record(
            user.username, "plan.created", AUDIT_OBJECT, plan.pk, {"plan": plan.pk, "name": name}
        )
        return _add_version(
            plan, user, document, parent=None, source_format=source_format, note=note,
            planner=planner, submit=submit, replan_reason="", side_effects=[], result=result,
        )  # fmt: skip


def create_version(
    plan: Plan,
    user: Any,
    document: PlanDocument,
    *,
    parent: PlanVersion | None = None,
    source_format: str = "json",
    replan_reason: str = "",
    note: str = "",
    planner: str = "editor",
    submit: bool = True,
    performed_side_effects: Iterable[PerformedSideEffect] = (),
    layout: Mapping[str, Sequence[float]] | None = None,
    import_warnings: Iterable[ImportWarning] = (),
) -> PlanVersion:
    """Save ``document`` as the plan's next version, derived from ``parent``.

    ``layout`` maps step ids to the positions the author placed them at
    (``plans.layout``: kept beside the document, outside its content hash).

    ``parent`` defaults to the plan's latest version. ``performed_side_effects`` are
    those carried out by runs of ``parent`` (a replan passes them); the new version
    holds the parent's own plus these, and the compiler warns about repeating any.
    ``import_warnings`` are stored among its diagnostics, as for ``create_plan``.
    """
    if parent is None:
        parent = Plan.objects.select_related("latest_version").get(pk=plan.pk).latest_version
    elif parent.plan_id != plan.pk:
        raise UnknownVersion(f"plan {plan.pk} has no version {parent.number}")
    side_effects = performed_side_effects_for(parent, performed_side_effects)
    # Compiled before the transaction: the database's write lock need not wait for it.
    result = compilation.compile_document(
        document, [PerformedSideEffect.from_data(item) for item in side_effects]
    ).noting(import_warnings)
    with transaction.atomic():
        return _add_version(
            plan, user, document, parent=parent, source_format=source_format, note=note,
            planner=planner, submit=submit, replan_reason=replan_reason,
            side_effects=side_effects, result=result,
            layout=layout_for(layout, (step.id for step in document.steps)),
        )  # fmt: skip


def performed_side_effects_for(
    parent: PlanVersion | None, performed: Iterable[PerformedSideEffect] = ()
) -> list[dict[str, str]]:
    """A child of ``parent``'s performed side effects: the parent's own, then
    ``performed`` (those of the parent's runs), each once, as stored."""
    items = list(parent.performed_side_effects) if parent is not None else []
    items += [effect.to_data() for effect in performed]
    unique: dict[tuple[str, ...], dict[str, str]] = {}
    for item in items:
        unique.setdefault((item["tool"], item["step"], item["args_hash"]), item)
    return list(unique.values())


def submit_version(version: PlanVersion, user: Any) -> PlanVersion:
    """Put a draft up for review (``awaiting_approval``) without a new version; a
    submitted version is left as is. Needs ``plan.edit``; a draft with compile errors
    cannot be submitted (409 ``has_errors``), nor one older than a version of its plan
    already submitted (409 ``superseded``). Older versions awaiting approval are
    superseded by it."""
    ensure_permission(user, "plan.edit")
    with transaction.atomic():
        Plan.objects.select_for_update().get(pk=version.plan_id)  # supersede one at a time
        locked = PlanVersion.objects.select_for_update().get(pk=version.pk)
        if locked.submitted:
            return locked
        if locked.has_errors:
            raise _has_errors(locked, "submitted")
        newer = _submitted(locked.plan_id).filter(number__gt=locked.number).order_by("-number")
        newest = newer.values_list("number", flat=True).first()
        if newest is not None:
            raise VersionSuperseded(
                f"version {locked.number} is older than v{newest}, already submitted for "
                f"review: save it again as a new version to submit it",
                newer=newest,
            )
        locked.submitted, locked.status = True, VersionStatus.AWAITING_APPROVAL
        locked.save(update_fields=["submitted", "status"])
        _record(user, "plan_version.submitted", locked, {"status": locked.status})
        _supersede_older(locked, user)
        _tell_submitted(locked)
    return locked


def approve(version: PlanVersion, user: Any, comment: str = "") -> Approval:
    """Approve a submitted version without compile errors; never by its author."""
    return _decide(version, user, Decision.APPROVED, comment)


def approve_by_policy(
    version: PlanVersion, parent: ExecutableGraph, graph: ExecutableGraph
) -> Approval:
    """The deployment policy's approval of ``version`` (compiled as ``graph``), a replan
    of the approved ``parent``: only a read-only replan that drops no constraint
    qualifies (``forge.runtime.gate``), and only while it waits for review: a person's
    rejection, or a draft its author has not submitted, is never overruled. Raises
    ``GateRefused`` (``needs_person``) naming why else. Recorded as approved by
    ``policy``."""
    if version.status == VersionStatus.SUPERSEDED:
        raise VersionSuperseded.of(version, "approved")
    if version.status != VersionStatus.AWAITING_APPROVAL:
        raise GateRefused(
            f"version {version.number} is {version.status.replace('_', ' ')}: only a person "
            "can approve it now",
            code="needs_person",
        )
    approval = plan_gate.gate().approve_by_policy(
        compilation.policy(),
        parent,
        graph,
        plan_id=str(version.plan_id),
        version=version.number,
        author=version.author.get_username(),
    )
    with transaction.atomic():
        locked = PlanVersion.objects.select_for_update().get(pk=version.pk)
        previous = locked.status
        if previous == VersionStatus.SUPERSEDED:  # superseded meanwhile
            raise VersionSuperseded.of(locked, "approved")
        if previous != VersionStatus.AWAITING_APPROVAL:  # decided meanwhile
            raise GateRefused(f"version {version.number} is {previous}", code="needs_person")
        row = Approval.objects.create(
            version=locked,
            reviewer=None,
            by_policy=True,
            decision=Decision.APPROVED,
            comment="a read-only replan that keeps every constraint (auto_approve_replans)",
            content_hash=approval.content_hash,
            signature=approval.signature,
        )
        locked.status = VersionStatus.APPROVED
        locked.save(update_fields=["status"])
        payload = {"plan": locked.plan_id, "version": locked.number}
        record(POLICY_APPROVER, "plan_version.approved", AUDIT_OBJECT, locked.plan_id, {
            **payload, "content_hash": approval.content_hash, "approval": row.pk,
            "by_policy": True, "previous_status": previous, "status": locked.status,
        })  # fmt: skip
    version.status = locked.status
    return row


def reject(version: PlanVersion, user: Any, comment: str = "") -> Approval:
    """Reject a submitted version; never by its author."""
    return _decide(version, user, Decision.REJECTED, comment)


def request_changes(version: PlanVersion, user: Any, comment: str = "") -> Approval:
    """Send a submitted version back to its author (``changes_requested``); never by its
    author. It cannot run, like a rejected version, until a later decision approves it."""
    return _decide(version, user, Decision.CHANGES_REQUESTED, comment)


def refresh_tools(user: Any) -> tuple[ServerStatus, ...]:
    """Discover every MCP server's tools again now (in this process), and audit what each
    answered: availability and tool count, never its command, URL or credentials."""
    ensure_permission(user, "tool.manage")
    box = compilation.toolbox()
    box.refresh()
    servers = box.servers()
    with transaction.atomic():
        record(user.username, "tools.refreshed", "tools", "mcp", {"servers": [
            {"name": s.name, "available": s.available, "tools": len(s.tools), "error": s.error}
            for s in servers
        ]})  # fmt: skip
    return servers


def export_version(version: PlanVersion, user: Any, format: str) -> str:
    """The version's document as ``format`` text; the export is audited."""
    text = dump_plan(compilation.stored_document(version), format)
    with transaction.atomic():
        _record(user, "plan_version.exported", version, {"format": format})
    return text


def diff_versions(old: PlanVersion, new: PlanVersion, user: Any) -> dict[str, Any]:
    """``forge.plan.diff_plans`` of two versions of one plan, as data; audited."""
    diff = diff_plans(compilation.stored_document(old), compilation.stored_document(new))
    with transaction.atomic():
        payload = {"plan": new.plan_id, "from": old.number, "to": new.number}
        record(user.username, "plan.diffed", AUDIT_OBJECT, new.plan_id, payload)
    return diff.to_data()


# --- Internals ---------------------------------------------------------------------------


def _add_version(
    plan: Plan,
    user: Any,
    document: PlanDocument,
    *,
    parent: PlanVersion | None,
    source_format: str,
    note: str,
    planner: str,
    submit: bool,
    replan_reason: str,
    side_effects: list[dict[str, str]],
    result: CompileResult,
    layout: dict[str, Any] | None = None,
) -> PlanVersion:
    """Inside the caller's transaction: number, save, audit, move latest_version."""
    diagnostics = [d.to_data() for d in result.diagnostics]
    has_errors = not result.ok
    locked = Plan.objects.select_for_update().get(pk=plan.pk)  # one number at a time
    last = locked.versions.order_by("-number").values_list("number", flat=True).first()
    version = PlanVersion.objects.create(
        plan=locked,
        number=(last or 0) + 1,
        document=to_data(document),
        content_hash=content_hash(document),
        source_format=source_format,
        parent=parent,
        replan_reason=redact_text(replan_reason),
        note=redact_text(note),
        author=user,
        planner=planner,
        diagnostics=diagnostics,
        has_errors=has_errors,
        impact=result.impact.to_data() if result.impact is not None else None,
        performed_side_effects=side_effects,
        layout=layout or {},
        submitted=submit,
        status=_initial_status(has_errors, submit),
    )
    locked.latest_version = version
    locked.save(update_fields=["latest_version"])
    plan.latest_version = version
    counts = Counter(d["severity"] for d in diagnostics)
    _record(user, "plan_version.created", version, {
        "parent": parent.number if parent is not None else None,
        "status": version.status,
        "source_format": source_format,
        "planner": planner,
        "steps": len(document.steps),
        "diagnostics": {severity: counts[severity] for severity in ("error", "warning", "info")},
        "diagnostic_codes": sorted({d["code"] for d in diagnostics}),
        "performed_side_effects": len(side_effects),
        "note": note,
        "replan_reason": replan_reason,
    })  # fmt: skip
    if version.status == VersionStatus.AWAITING_APPROVAL:
        _supersede_older(version, user)
        _tell_submitted(version)
    return version


def _initial_status(has_errors: bool, submit: bool) -> str:
    if has_errors:
        return VersionStatus.HAS_ERRORS
    return VersionStatus.AWAITING_APPROVAL if submit else VersionStatus.DRAFT


def _submitted(plan_id: int) -> QuerySet[PlanVersion]:
    """The plan's versions that were put up for review (whatever became of them since)."""
    return PlanVersion.objects.filter(plan_id=plan_id, submitted=True, has_errors=False)


def _supersede_older(version: PlanVersion, user: Any) -> None:
    """Inside the caller's transaction, which holds the plan's lock: ``version`` was just
    submitted, so every older version of its plan still awaiting approval is superseded
    by it, audited, and told once the transaction commits."""
    stale = PlanVersion.objects.select_for_update().filter(
        plan_id=version.plan_id, status=VersionStatus.AWAITING_APPROVAL, number__lt=version.number
    )
    for older in stale.order_by("number"):
        older.status, older.superseded_by = VersionStatus.SUPERSEDED, version
        older.save(update_fields=["status", "superseded_by"])
        _record(user, "plan_version.superseded", older, {
            "superseded_by": version.number, "previous_status": VersionStatus.AWAITING_APPROVAL,
            "status": older.status,
        })  # fmt: skip
        transaction.on_commit(
            partial(
                signals.version_superseded.send, sender=PlanVersion, version_id=older.pk,
                newer_id=version.pk, actor=user.get_username(),
            )
        )  # fmt: skip


def _decide(version: PlanVersion, user: Any, decision: str, comment: str) -> Approval:
    ensure_permission(user, "plan.approve")
    verb = {Decision.APPROVED: "approve", Decision.REJECTED: "reject"}.get(
        Decision(decision), "request changes of"
    )
    if version.author_id == user.pk:
        raise PermissionDenied(f"Authors cannot {verb} their own versions")
    with transaction.atomic():
        locked = PlanVersion.objects.select_for_update().get(pk=version.pk)
        if decision == Decision.APPROVED and locked.has_errors:
            raise _has_errors(locked, "approved")
        if not locked.submitted:
            raise VersionNotSubmitted(
                f"version {locked.number} is a draft; its author must submit it first"
            )
        if locked.status == VersionStatus.SUPERSEDED:
            done = {Decision.APPROVED: "approved", Decision.REJECTED: "rejected"}
            raise VersionSuperseded.of(locked, done.get(Decision(decision), "sent back"))
        previous = locked.status
        # What the reviewer approves is the document as stored now, hashed afresh (not
        # the content_hash column, which is only as good as the row it sits in).
        digest = content_hash(compilation.stored_document(locked))
        signature = ""
        teams = list(teams_of(user))
        if decision == Decision.APPROVED:
            signature = (
                plan_gate.gate()
                .approve(
                    plan_id=str(locked.plan_id),
                    version=locked.number,
                    content_hash=digest,
                    author=locked.author.get_username(),
                    approver=user.get_username(),
                    teams=teams,
                )
                .signature
            )
        rules_version, _ = rules_in_force()
        approval = Approval.objects.create(
            version=locked, reviewer=user, decision=decision, comment=redact_text(comment),
            content_hash=digest, signature=signature, teams=teams, rules_version=rules_version,
        )  # fmt: skip
        # The latest decision is the status, but an approval makes a version approved only
        # once the approvals since its latest stop satisfy every approval rule matching it
        # (SPEC section 10); until then it keeps awaiting approval.
        judgement = version_judgement(locked)
        status = VersionStatus(decision)
        if status == VersionStatus.APPROVED and judgement is not None and not judgement.approved:
            status = VersionStatus.AWAITING_APPROVAL
        locked.status = status
        locked.save(update_fields=["status"])
        _record(user, f"plan_version.{decision}", locked, {
            "approval": approval.pk, "comment": comment, "approved_hash": digest,
            "previous_status": previous, "status": locked.status, "teams": teams,
            "rules_version": rules_version,
            **({} if judgement is None else {
                "rules": [rule.to_data() for rule in judgement.rules],
                "not_counted": list(judgement.not_counted),
            }),
        })  # fmt: skip
    version.status = locked.status
    version_id, reviewer, said = locked.pk, user.get_username(), approval.comment
    if decision == Decision.APPROVED:
        if locked.status == VersionStatus.APPROVED:
            transaction.on_commit(
                lambda: signals.version_approved.send(
                    sender=PlanVersion, version_id=version_id, approver=reviewer, comment=said
                )
            )
        else:  # it still waits for a rule, no longer for this approver
            transaction.on_commit(
                lambda: signals.version_approval_counted.send(
                    sender=PlanVersion, version_id=version_id, approver=reviewer
                )
            )
    else:
        told = signals.version_rejected
        if decision == Decision.CHANGES_REQUESTED:
            told = signals.version_changes_requested
        transaction.on_commit(
            lambda: told.send(
                sender=PlanVersion, version_id=version_id, reviewer=reviewer, comment=said
            )
        )
    return approval


def _tell_submitted(version: PlanVersion) -> None:
    """Inside the caller's transaction: once it commits, say the version waits for review."""
    version_id, author = version.pk, version.author.get_username()
    transaction.on_commit(
        lambda: signals.version_submitted.send(
            sender=PlanVersion, version_id=version_id, author=author
        )
    )


def _has_errors(version: PlanVersion, verb: str) -> VersionHasErrors:
    return VersionHasErrors(
        f"version {version.number} has compile errors and cannot be {verb}",
        diagnostics=[d for d in version.diagnostics if d.get("severity") == "error"],
    )


def _record(user: Any, action: str, version: PlanVersion, extra: dict[str, Any]) -> None:
    payload = {"plan": version.plan_id, "version": version.number}
    payload["content_hash"] = version.content_hash
    record(user.username, action, AUDIT_OBJECT, version.plan_id, {**payload, **extra})
