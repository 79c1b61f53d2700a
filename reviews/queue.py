"""What waits for a person's decision: the read-only queries behind the approval queue
(``/review/``) and the waiting counts.

The queue applies the rules the services apply when a decision is posted, so what it
offers is what the API accepts: a plan version that awaits approval (submitted, compiles,
not superseded by a newer one) and was written by someone else
(``plans.services.approve``), compared with the last version an approver saw
(``Bases``), and a step of a live run that waits
in ``awaiting_approval`` on the run's current version, offered only to approvers who did
not write that version (``runs.services.approve_step``). Under approval rules (SPEC
section 10) each is offered only to people who can satisfy an open rule matching it
(``Judgement.can_help``: the version's rules, or the step's as ``runs.step_rules`` judges
them), and each card lists those rules. What changed since the base
version is ``reviews.changes``'; the budget rows are ``reviews.budget``'s; a run's replan
story is ``reviews.replan_story``'s. Nothing here writes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from django.db.models import F, QuerySet

from accounts.teams import teams_of
from forge.plan import canonical_json, diff_plans
from forge.plan.diff_text import change_lines
from forge.plan.drift import detect_drift
from forge.plan.references import scan
from forge.rules import FOUR_EYES, Judgement, RuleSet
from forge.runtime.calls import UnresolvedCall, resolve_args
from forge.runtime.events import EventType
from gateway.held import held_call_data, held_judgement, waiting_calls
from gateway.models import HeldCall
from plans.compilation import stored_document
from plans.impact import impact_changes, impact_view, version_impact, version_pauses
from plans.models import PlanVersion, VersionStatus
from plans.rules import current_rules, judgement_view, rules_view, shown_judgement
from reviews.budget import budget_rows
from reviews.changes import Bases, bases_for
from reviews.step_values import argument_values, shown
from reviews.threads import ThreadView, threads_for_many
from runs.models import Run, RunEvent, StepRun
from runs.previews import preview_view
from runs.step_rules import step_judgements

__all__ = [
    "LIVE_RUN_STATUSES",
    "QUEUE_LIMIT",
    "Queue",
    "queue_for",
    "reachable_steps",
    "reachable_versions",
    "waiting_count",
]

# The queue shows the oldest items first, this many of each kind; the page says how many
# more there are.
QUEUE_LIMIT = 100
# Runs whose waiting steps can be approved: a run that needs a replan starts its steps
# over on the new version, so an approval given now would be lost.
LIVE_RUN_STATUSES = ("queued", "running", "awaiting_approval")


def _versions_waiting(user: Any) -> QuerySet[PlanVersion]:
    return PlanVersion.objects.filter(
        status=VersionStatus.AWAITING_APPROVAL, submitted=True, has_errors=False
    ).exclude(author_id=user.pk)


def _steps_waiting(user: Any) -> QuerySet[StepRun]:
    return StepRun.objects.filter(
        status="awaiting_approval",
        run__status__in=LIVE_RUN_STATUSES,
        plan_version=F("run__version__number"),
    ).exclude(run__version__author_id=user.pk)


def reachable_versions(
    user: Any, versions: Iterable[PlanVersion], rules: RuleSet
) -> list[PlanVersion]:
    """The versions ``user`` can bring closer to approval under the approval ``rules``:
    an open rule they qualify for and do not count toward yet (``Judgement.can_help``).
    Without rules (four eyes alone) every waiting version not their own."""
    if rules == FOUR_EYES:
        return list(versions)
    name, teams = user.get_username(), teams_of(user)
    reachable = []
    for version in versions:
        judgement = shown_judgement(version, rules)
        if judgement is None or judgement.can_help(name, teams):
            reachable.append(version)
    return reachable


def reachable_steps(
    user: Any, steps: Iterable[StepRun], rules: RuleSet
) -> tuple[list[StepRun], dict[int, Judgement | None]]:
    """The waiting steps ``user`` can bring closer to approval under the rules that match
    each step (``runs.step_rules``, as the gate judges them), with every step's judgement;
    without rules (four eyes alone) every one, with no judgement read."""
    steps = list(steps)
    if rules == FOUR_EYES:
        return steps, {}
    judgements = step_judgements(steps)
    name, teams = user.get_username(), teams_of(user)
    reachable = [
        step
        for step in steps
        if (judgement := judgements.get(step.pk)) is None or judgement.can_help(name, teams)
    ]
    return reachable, judgements


def waiting_count(user: Any) -> int:
    """How many items wait for ``user``'s decision (two COUNT queries at most without
    approval rules; under rules each waiting version and step is judged)."""
    if not getattr(user, "is_authenticated", False):
        return 0
    count = 0
    rules = current_rules()
    if user.can("plan.approve"):
        if rules == FOUR_EYES:
            count += _versions_waiting(user).count()
        else:
            waiting = _versions_waiting(user).select_related("author")
            count += len(
                reachable_versions(user, waiting.prefetch_related("approvals__reviewer"), rules)
            )
    if user.can("step.approve"):
        if rules == FOUR_EYES:
            count += _steps_waiting(user).count()
        else:
            steps = _steps_waiting(user).select_related("run__version__author")
            count += len(reachable_steps(user, steps, rules)[0])
        count += len(waiting_calls(user))
    return count


@dataclass(frozen=True)
class Queue:
    """The items waiting for one user, oldest first, and what the page says around them."""

    versions: list[dict[str, Any]]
    versions_total: int
    steps: list[dict[str, Any]]
    steps_total: int
    can_approve_versions: bool
    can_approve_steps: bool
    # Versions the user wrote that wait for another approver: shown, not offered.
    own_versions: int
    own_steps: int
    # Milestones of live runs that wait for a person's review (runs.services
    # .review_milestone), offered to step approvers who did not write the version.
    milestones: tuple[dict[str, Any], ...] = ()
    # Agents' calls held by the gateway (gateway.held), offered to step approvers who
    # did not make them and can bring them closer to approval.
    calls: tuple[dict[str, Any], ...] = ()


def queue_for(user: Any, limit: int = QUEUE_LIMIT) -> Queue:
    can_versions = user.can("plan.approve")
    can_steps = user.can("step.approve")
    versions: list[dict[str, Any]] = []
    steps: list[dict[str, Any]] = []
    versions_total = steps_total = own_versions = own_steps = 0
    if can_versions:
        versions, versions_total = _waiting_versions(user, limit)
        own_versions = PlanVersion.objects.filter(
            status=VersionStatus.AWAITING_APPROVAL, submitted=True, author_id=user.pk
        ).count()
    if can_steps:
        steps, steps_total = _waiting_steps(user, limit)
        own_steps = StepRun.objects.filter(
            status="awaiting_approval",
            run__status__in=LIVE_RUN_STATUSES,
            plan_version=F("run__version__number"),
            run__version__author_id=user.pk,
        ).count()
    milestones = tuple(_waiting_milestones(user, limit)) if can_steps else ()
    calls = tuple(_call_item(held) for held in waiting_calls(user)[:limit]) if can_steps else ()
    return Queue(
        milestones=milestones,
        calls=calls,
        versions=versions,
        versions_total=versions_total,
        steps=steps,
        steps_total=steps_total,
        can_approve_versions=can_versions,
        can_approve_steps=can_steps,
        own_versions=own_versions,
        own_steps=own_steps,
    )


def _call_item(held: HeldCall) -> dict[str, Any]:
    """A held call as its card shows it: what it would do, who asked and since when, and
    the rules that still ask for people."""
    return {
        **held_call_data(held),
        "key": f"call-{held.pk}",
        "arguments_text": json.dumps(held.arguments, indent=2, ensure_ascii=False, sort_keys=True),
        "lacking": list(held_judgement(held).lacking()),
    }


def _total(rows: QuerySet[Any], shown: int, limit: int) -> int:
    return shown if shown < limit else rows.count()


def _waiting_versions(user: Any, limit: int) -> tuple[list[dict[str, Any]], int]:
    rows = (
        _versions_waiting(user)
        .select_related("plan", "author", "parent")
        .prefetch_related("approvals__reviewer")
        .order_by("created_at", "pk")
    )
    rules = current_rules()  # read once for the page
    if rules == FOUR_EYES:
        versions = list(rows[:limit])
        total = _total(rows, len(versions), limit)
    else:  # who is asked depends on each version's rules: judged one by one
        reachable = reachable_versions(user, rows, rules)
        versions, total = reachable[:limit], len(reachable)
    bases = bases_for(versions)
    runs = _runs_needing_replan({version.plan_id for version in versions})
    threads = threads_for_many(versions)
    items = [
        _version_item(
            version,
            bases.get(version.pk, Bases()),
            [run for run in runs.get(version.plan_id, []) if run["version"] < version.number],
            threads[version.pk],
            rules,
        )
        for version in versions
    ]
    return items, total


def _runs_needing_replan(plan_ids: set[int]) -> dict[int, list[dict[str, Any]]]:
    runs: dict[int, list[dict[str, Any]]] = {}
    if not plan_ids:
        return runs
    for run_id, plan_id, number, failed, document in (
        Run.objects.filter(plan_id__in=plan_ids, status="needs_replan")
        .order_by("pk")
        .values_list("pk", "plan_id", "version__number", "failed_step", "version__document")
    ):
        runs.setdefault(plan_id, []).append({
            "id": run_id, "version": number, "failed": failed,
            # replan: auto: the run resumes by itself once a person approves its replan
            "auto": isinstance(document, dict) and document.get("replan") == "auto",
        })  # fmt: skip
    return runs


def _version_item(
    version: PlanVersion,
    bases: Bases,
    runs: list[dict[str, Any]],
    threads: list[ThreadView],
    rules: RuleSet | None = None,
) -> dict[str, Any]:
    document = version.document
    base, approved = bases.seen, bases.approved
    diff: dict[str, Any] | None = None
    drift: list[str] = []
    if base is not None:
        diff = diff_plans(stored_document(base), stored_document(version)).to_data()
    if approved is not None:
        drift = list(detect_drift(stored_document(approved), stored_document(version)))
    diagnostics = version.diagnostics
    return {
        "key": f"version-{version.pk}",
        "plan": {"id": version.plan_id, "name": version.plan.name},
        "number": version.number,
        "author": version.author.get_username(),
        "planner": version.planner,
        "note": version.note,
        "replan_reason": version.replan_reason,
        "created_at": version.created_at,
        "parent": version.parent.number if version.parent_id else None,
        "goal": document.get("goal", ""),
        "steps": len(document.get("steps", [])),
        "risk_level": document.get("risk_level", "low"),
        "scopes": list(document.get("requires_approval_before", [])),
        "pauses": version_pauses(version) or [],
        "warnings": [item for item in diagnostics if item.get("severity") == "warning"],
        "budget": budget_rows(stored_document(version)),
        "impact": impact_view(version_impact(version)),
        "impact_changes": impact_changes(base, version) if base is not None else [],
        "rules": rules_view(version, rules),
        "baseline": base.number if base is not None else None,
        "baseline_why": bases.why,
        "diff": diff,
        "changes": change_lines(diff) if diff is not None else [],
        "drift_base": approved.number if approved is not None else None,
        "drift": drift,
        "runs": runs,
        "threads": _threads_summary(threads),
        # For the page's diff graph (handed over as JSON, not rendered).
        "document": document,
        "baseline_document": base.document if base is not None else None,
    }


def _threads_summary(threads: list[ThreadView]) -> dict[str, Any]:
    """A version's review threads as its queue card shows them: the unresolved ones
    (open first, then outdated), each with its first comment."""
    views = [view for view in threads if not view.resolved]
    views.sort(key=lambda view: view.outdated)
    return {
        "open": sum(1 for view in views if view.open),
        "outdated": sum(1 for view in views if view.outdated),
        "shown": [
            {**asdict(view), "first": asdict(view.comments[0]), "replies": len(view.comments) - 1}
            for view in views
            if view.comments
        ],
    }


def _waiting_milestones(user: Any, limit: int) -> list[dict[str, Any]]:
    """Reached milestones of live runs that no one has reviewed since (and that no
    resume has superseded), with the facts of their steps, oldest first."""
    reached = (
        RunEvent.objects.filter(
            run__status__in=LIVE_RUN_STATUSES, event_type=EventType.MILESTONE_REACHED
        )
        .exclude(run__version__author_id=user.pk)
        .select_related("run", "run__plan", "run__version")
        .order_by("created_at", "pk")
    )
    items: list[dict[str, Any]] = []
    for event in reached[: limit * 4]:
        facts = event.facts if isinstance(event.facts, dict) else {}
        milestone = str(facts.get("milestone", ""))
        later = RunEvent.objects.filter(
            run_id=event.run_id,
            seq__gt=event.seq,
            event_type__in=(EventType.MILESTONE_REVIEWED, EventType.RUN_RESUMED),
        ).values_list("event_type", "facts")
        if any(kind == EventType.RUN_RESUMED or (f or {}).get("milestone") == milestone
               for kind, f in later):  # fmt: skip
            continue
        run = event.run
        steps = [str(step) for step in facts.get("steps", [])]
        outputs = dict(
            StepRun.objects.filter(
                run=run, plan_version=event.plan_version, step_id__in=steps
            ).values_list("step_id", "output")
        )
        items.append(
            {
                "key": f"milestone-{run.pk}-{milestone}",
                "run": {"id": run.pk, "status": run.status},
                "plan": {"id": run.plan_id, "name": run.plan.name},
                "version": event.plan_version,
                "milestone": milestone,
                "title": facts.get("title") or milestone,
                "reached_at": event.created_at,
                "facts": [{"step": step, "output": shown(outputs.get(step))} for step in steps],
            }
        )
        if len(items) >= limit:
            break
    return items


def _waiting_steps(user: Any, limit: int) -> tuple[list[dict[str, Any]], int]:
    rows = (
        _steps_waiting(user)
        .select_related("run", "run__plan", "run__version", "run__version__author",
                        "run__started_by")
        .order_by("run__created_at", "run_id", "position")
    )  # fmt: skip
    rules = current_rules()  # read once for the page
    if rules == FOUR_EYES:
        steps = list(rows[:limit])
        total = _total(rows, len(steps), limit)
        judgements = step_judgements(steps)  # the default rule each, shown as for versions
    else:  # who is asked depends on the rules matching each step: judged one by one
        reachable, judgements = reachable_steps(user, rows, rules)
        steps, total = reachable[:limit], len(reachable)
    waits: dict[tuple[int, str, int], RunEvent] = {}
    if steps:
        for event in RunEvent.objects.filter(
            run_id__in={step.run_id for step in steps},
            event_type=EventType.STEP_AWAITING_APPROVAL,
        ).order_by("seq"):
            waits[(event.run_id, event.step_id or "", event.plan_version)] = event  # latest wins
    items = [
        {
            **_step_item(step, waits.get((step.run_id, step.step_id, step.plan_version))),
            "rules": judgement_view(judgements.get(step.pk)),
        }
        for step in steps
    ]
    return items, total


def _step_item(step_run: StepRun, event: RunEvent | None) -> dict[str, Any]:
    run = step_run.run
    version = run.version
    document = version.document
    step = _steps_by_id(document).get(step_run.step_id, {})
    args = step.get("args", {})
    tool = step.get("tool") or ""
    args_hash = event.tool_args_hash if event is not None else step_run.args_hash
    # A tool step's approval binds the SHA-256 of its canonical arguments; say whether the
    # arguments shown are exactly those (an agent step's approval binds its fingerprint).
    # Arguments that take values from earlier steps are shown as written, and the hash
    # checked over them with those values resolved, as the run resolved them.
    sources = _sources(args) if tool else ()
    outputs = _succeeded_outputs(step_run, args) if sources else {}
    shown = _resolved(args, outputs) if sources else args
    shown_hash = (
        hashlib.sha256(canonical_json(shown).encode()).hexdigest()
        if tool and shown is not None
        else ""
    )
    facts = event.facts if event is not None and isinstance(event.facts, dict) else {}
    return {
        "key": f"step-{run.pk}-{step_run.step_id}",
        "run": {
            "id": run.pk,
            "status": run.status,
            "started_by": run.started_by.get_username(),
            "created_at": run.created_at,
            "replans": run.replans,
        },
        "plan": {"id": run.plan_id, "name": run.plan.name},
        "version": version.number,
        "step": step_run.step_id,
        "description": step.get("description", ""),
        "tool": tool,
        "tools_allowed": list(step.get("tools_allowed", [])),
        "args": json.dumps(args, indent=2, sort_keys=True, ensure_ascii=False),
        "reasons": event.blocked_reason.split("; ") if event and event.blocked_reason else [],
        "scope": event.permission_scope if event is not None else "",
        "side_effect": event.side_effect if event is not None else "",
        "args_hash": args_hash,
        "hash_matches": bool(tool) and shown_hash == args_hash,
        "sources": list(sources),
        "waiting_since": event.created_at if event is not None else None,
        "risk_level": document.get("risk_level", "low"),
        "depends_on": list(step.get("depends_on", [])),
        # What it will do (a diff, the request, argv, ...): the approval binds its hash.
        "preview": preview_view(facts.get("preview")),
        # For the step details (handed over as JSON): the step as written, and the values
        # its arguments take from earlier steps' outputs.
        "document_step": step,
        "resolved": {"args": argument_values(args, outputs) if sources else {}},
    }


def _sources(args: Any) -> tuple[str, ...]:
    """The earlier outputs the arguments take values from (``read.content``), if any."""
    if not isinstance(args, dict):
        return ()
    template = scan(args)
    return tuple(dict.fromkeys(reference.source_text for reference in template.references))


def _succeeded_outputs(step_run: StepRun, args: dict[str, Any]) -> dict[str, Any]:
    """The outputs of the run's succeeded steps that ``args`` refer to."""
    steps = {reference.step for reference in scan(args).references}
    return dict(
        StepRun.objects.filter(
            run_id=step_run.run_id,
            plan_version=step_run.plan_version,
            step_id__in=steps,
            status="succeeded",
        ).values_list("step_id", "output")
    )


def _resolved(args: dict[str, Any], outputs: dict[str, Any]) -> Any:
    """The arguments with the values their references name, from the run's succeeded
    steps (``forge.runtime.calls.resolve_args``); ``None`` when they cannot be."""
    try:
        return resolve_args(args, outputs)
    except UnresolvedCall:
        return None


def _steps_by_id(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for step in document.get("steps", []):
        found.setdefault(step.get("id", ""), step)
    return found
