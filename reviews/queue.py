"""What waits for a person's decision, and how a run came to its current version: the
read-only queries behind the approval queue (``/review/``) and a run's replan view
(``/runs/<id>/replans/``).

The queue applies the rules the services apply when a decision is posted, so what it
offers is what the API accepts: a plan version that is submitted, compiles and was
written by someone else (``plans.services.approve``), and a step of a live run that waits
in ``awaiting_approval`` on the run's current version, offered only to approvers who did
not write that version (``runs.services.approve_step``). A replan story is read from the
run's events: ``run_needs_replan`` (what failed, what starts over) and ``run_resumed``
(who continued on which version, what was kept), with the versions' diff and drift
computed from their stored documents. Nothing here writes.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from typing import Any

from django.db.models import F, QuerySet

from forge.plan import canonical_json, diff_plans
from forge.plan.drift import detect_drift
from forge.plan.references import scan
from forge.runtime.calls import UnresolvedCall, resolve_args
from forge.runtime.events import EventType
from plans.compilation import stored_document
from plans.impact import impact_changes, impact_view, version_impact
from plans.models import Approval, PlannerProposal, PlanVersion, VersionStatus
from plans.planning import proposal_data
from reviews.threads import ThreadView, threads_for_many
from runs.models import Run, RunEvent, StepRun
from runs.previews import preview_view

__all__ = [
    "QUEUE_LIMIT",
    "Queue",
    "budget_estimate",
    "queue_for",
    "replan_story",
    "waiting_count",
]

# The queue shows the oldest items first, this many of each kind; the page says how many
# more there are.
QUEUE_LIMIT = 100
# A kept output or a failed step's output on the replan page is cut after this many
# characters of pretty JSON: the run page's drawer has the whole of it.
OUTPUT_LIMIT = 6_000
# Runs whose waiting steps can be approved: a run that needs a replan starts its steps
# over on the new version, so an approval given now would be lost.
LIVE_RUN_STATUSES = ("queued", "running", "awaiting_approval")
_ARROW = " → "


# --- The approval queue ---------------------------------------------------------------


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


def waiting_count(user: Any) -> int:
    """How many items wait for ``user``'s decision (two COUNT queries at most)."""
    if not getattr(user, "is_authenticated", False):
        return 0
    count = 0
    if user.can("plan.approve"):
        count += _versions_waiting(user).count()
    if user.can("step.approve"):
        count += _steps_waiting(user).count()
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
    return Queue(
        milestones=milestones,
        versions=versions,
        versions_total=versions_total,
        steps=steps,
        steps_total=steps_total,
        can_approve_versions=can_versions,
        can_approve_steps=can_steps,
        own_versions=own_versions,
        own_steps=own_steps,
    )


def _total(rows: QuerySet[Any], shown: int, limit: int) -> int:
    return shown if shown < limit else rows.count()


def _waiting_versions(user: Any, limit: int) -> tuple[list[dict[str, Any]], int]:
    rows = (
        _versions_waiting(user)
        .select_related("plan", "author", "parent")
        .order_by("created_at", "pk")
    )
    versions = list(rows[:limit])
    baselines = _last_approved(versions)
    runs = _runs_needing_replan({version.plan_id for version in versions})
    threads = threads_for_many(versions)
    items = [
        _version_item(
            version,
            baselines.get(version.pk),
            [run for run in runs.get(version.plan_id, []) if run["version"] < version.number],
            threads[version.pk],
        )
        for version in versions
    ]
    return items, _total(rows, len(versions), limit)


def _last_approved(versions: list[PlanVersion]) -> dict[int, PlanVersion]:
    """For each version, the plan's newest approved version numbered before it."""
    if not versions:
        return {}
    approved: dict[int, list[tuple[int, int]]] = {}
    for plan_id, number, pk in (
        PlanVersion.objects.filter(
            plan_id__in={version.plan_id for version in versions}, status=VersionStatus.APPROVED
        )
        .order_by("plan_id", "number")
        .values_list("plan_id", "number", "pk")
    ):
        approved.setdefault(plan_id, []).append((number, pk))
    chosen: dict[int, int] = {}
    for version in versions:
        earlier = [
            pk for number, pk in approved.get(version.plan_id, []) if number < version.number
        ]
        if earlier:
            chosen[version.pk] = earlier[-1]
    loaded = PlanVersion.objects.in_bulk(set(chosen.values()))
    return {pk: loaded[base] for pk, base in chosen.items()}


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
    base: PlanVersion | None,
    runs: list[dict[str, Any]],
    threads: list[ThreadView],
) -> dict[str, Any]:
    document = version.document
    diff: dict[str, Any] | None = None
    drift: list[str] = []
    if base is not None:
        old, new = stored_document(base), stored_document(version)
        diff = diff_plans(old, new).to_data()
        drift = list(detect_drift(old, new))
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
        "pauses": [_pause(item) for item in diagnostics if item.get("code") == "approval_required"],
        "warnings": [item for item in diagnostics if item.get("severity") == "warning"],
        "budget": budget_estimate(document),
        "impact": impact_view(version_impact(version)),
        "impact_changes": impact_changes(base, version) if base is not None else [],
        "baseline": base.number if base is not None else None,
        "diff": diff,
        "changes": _change_lines(diff) if diff is not None else [],
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


def _pause(diagnostic: dict[str, Any]) -> dict[str, Any]:
    # The compiler's message is "step 'x' will wait for approval: reason; reason".
    message = str(diagnostic.get("message", ""))
    _, found, reasons = message.partition("will wait for approval: ")
    nodes = diagnostic.get("nodes") or [""]
    return {"step": nodes[0], "reasons": reasons.split("; ") if found else [message]}


def budget_estimate(document: dict[str, Any]) -> list[dict[str, Any]]:
    """The static estimate the compiler checks (``budget_exceeded_statically``): the step
    count and the sums of the steps' ``estimate`` against the plan's budget."""
    budget = document.get("budget") or {}
    steps = document.get("steps", [])
    estimates = [step["estimate"] for step in steps if step.get("estimate")]
    tokens = sum(int(estimate.get("tokens", 0)) for estimate in estimates)
    cost = sum(float(estimate.get("cost", 0.0)) for estimate in estimates)
    rows = []
    for name, label, value, limit in (
        ("steps", "Steps", len(steps), budget.get("max_steps")),
        ("tokens", "Tokens", tokens, budget.get("max_tokens")),
        ("cost", "Cost", cost, budget.get("max_cost")),
    ):
        share = None if not limit else min(100, round(100 * value / limit))
        rows.append(
            {
                "name": name,
                "label": label,
                "estimate": round(value, 4) if name == "cost" else value,
                "limit": limit,
                "over": limit is not None and value > limit,
                "share": share,
            }
        )
    return [*rows, {"name": "estimated", "value": len(estimates), "of": len(steps)}]


def _short(value: Any, size: int = 70) -> str:
    if value is None:
        return "—"
    # Plain words read as words; a string with line breaks or edge spaces is quoted, so a
    # reviewer sees exactly what changed.
    plain = isinstance(value, str) and value == value.strip() and value.isprintable()
    text = value if plain else json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= size else f"{text[: size - 1]}…"


def _field_lines(name: str, before: Any, after: Any) -> list[str]:
    """``name: before → after``; for two objects, one line per key that differs, so a
    changed argument or budget limit reads as itself rather than as two whole objects."""
    if isinstance(before, dict) and isinstance(after, dict):
        keys = sorted(set(before) | set(after))
        return [
            f"{name}.{key}: {_short(before.get(key))}{_ARROW}{_short(after.get(key))}"
            for key in keys
            if before.get(key) != after.get(key)
        ]
    return [f"{name}: {_short(before)}{_ARROW}{_short(after)}"]


def _change_lines(diff: dict[str, Any]) -> list[dict[str, Any]]:
    """The diff as lines a reviewer reads top to bottom: plan fields, then steps, then
    dependencies."""
    lines: list[dict[str, Any]] = [
        {
            "kind": "changed",
            "title": f"plan {change['field']}",
            "detail": "",
            "fields": _field_lines(change["field"], change["before"], change["after"]),
            "steps": [],
        }
        for change in diff["plan_changes"]
    ]
    lines += [{"kind": "added", "title": step, "detail": "added", "steps": [step]}
              for step in diff["added_steps"]]  # fmt: skip
    lines += [{"kind": "removed", "title": step, "detail": "removed", "steps": [step]}
              for step in diff["removed_steps"]]  # fmt: skip
    for change in diff["changed_steps"]:
        fields = [
            line
            for item in change["changes"]
            for line in _field_lines(item["field"], item["before"], item["after"])
        ]
        lines.append(
            {"kind": "changed", "title": change["id"], "detail": "", "fields": fields,
             "steps": [change["id"]]}
        )  # fmt: skip
    lines += [{"kind": "added", "title": f"{dep}{_ARROW}{step}", "detail": "dependency added",
               "steps": [dep, step]} for dep, step in diff["added_edges"]]  # fmt: skip
    lines += [{"kind": "removed", "title": f"{dep}{_ARROW}{step}", "detail": "dependency removed",
               "steps": [dep, step]} for dep, step in diff["removed_edges"]]  # fmt: skip
    return lines


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
                "facts": [{"step": step, "output": _pretty(outputs.get(step))} for step in steps],
            }
        )
        if len(items) >= limit:
            break
    return items


def _waiting_steps(user: Any, limit: int) -> tuple[list[dict[str, Any]], int]:
    rows = (
        _steps_waiting(user)
        .select_related("run", "run__plan", "run__version", "run__started_by")
        .order_by("run__created_at", "run_id", "position")
    )
    steps = list(rows[:limit])
    waits: dict[tuple[int, str, int], RunEvent] = {}
    if steps:
        for event in RunEvent.objects.filter(
            run_id__in={step.run_id for step in steps},
            event_type=EventType.STEP_AWAITING_APPROVAL,
        ).order_by("seq"):
            waits[(event.run_id, event.step_id or "", event.plan_version)] = event  # latest wins
    items = [
        _step_item(step, waits.get((step.run_id, step.step_id, step.plan_version)))
        for step in steps
    ]
    return items, _total(rows, len(steps), limit)


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
    shown = _resolved(step_run, args, sources) if sources else args
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
    }


def _sources(args: Any) -> tuple[str, ...]:
    """The earlier outputs the arguments take values from (``read.content``), if any."""
    if not isinstance(args, dict):
        return ()
    template = scan(args)
    return tuple(dict.fromkeys(reference.source_text for reference in template.references))


def _resolved(step_run: StepRun, args: dict[str, Any], sources: tuple[str, ...]) -> Any:
    """The arguments with the values their references name, from the run's succeeded
    steps (``forge.runtime.calls.resolve_args``); ``None`` when they cannot be."""
    steps = {reference.step for reference in scan(args).references}
    outputs = dict(
        StepRun.objects.filter(
            run_id=step_run.run_id,
            plan_version=step_run.plan_version,
            step_id__in=steps,
            status="succeeded",
        ).values_list("step_id", "output")
    )
    try:
        return resolve_args(args, outputs)
    except UnresolvedCall:
        return None


def _steps_by_id(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for step in document.get("steps", []):
        found.setdefault(step.get("id", ""), step)
    return found


# --- A run's replans ------------------------------------------------------------------


def _pretty(value: Any) -> dict[str, Any]:
    text = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)
    if len(text) <= OUTPUT_LIMIT:
        return {"text": text, "truncated": False}
    return {"text": text[:OUTPUT_LIMIT], "truncated": True}


def replan_story(run: Run) -> dict[str, Any]:
    """The run's versions in the order it used them, and each replan: the failure that
    caused it, the reset and kept sets, who resumed on which version, and what changed
    and drifted between the two versions. ``pending`` is the replan still waiting for a
    version when the run needs one now."""
    events = list(
        RunEvent.objects.filter(
            run=run,
            event_type__in=(
                EventType.RUN_STARTED,
                EventType.RUN_NEEDS_REPLAN,
                EventType.RUN_RESUMED,
            ),
        ).order_by("seq")
    )
    first = events[0].plan_version if events else run.version.number
    used = [first] + [e.plan_version for e in events if e.event_type == EventType.RUN_RESUMED]
    versions = {
        version.number: version
        for version in PlanVersion.objects.filter(plan_id=run.plan_id, number__in=used)
        .select_related("author", "parent")
        .prefetch_related("approvals__reviewer")
    }
    statuses: dict[int, dict[str, str]] = {}
    for number, step_id, status in StepRun.objects.filter(run=run).values_list(
        "plan_version", "step_id", "status"
    ):
        statuses.setdefault(number, {})[step_id] = status

    replans: list[dict[str, Any]] = []
    current = first
    for event in events:
        if event.event_type == EventType.RUN_NEEDS_REPLAN:
            replans.append(_failure(run, event, current))
        elif event.event_type == EventType.RUN_RESUMED and replans and replans[-1]["to"] is None:
            replans[-1] = _resumed(run, replans[-1], event, versions)
            current = event.plan_version
    for index, replan in enumerate(replans, start=1):
        replan["index"] = index
    _attach_proposals(run, replans)
    pending = run.status == "needs_replan" and bool(replans) and replans[-1]["to"] is None
    newer = []
    if pending:
        newer = [
            _version_summary(version)
            for version in PlanVersion.objects.filter(plan_id=run.plan_id, number__gt=current)
            .select_related("author", "parent")
            .order_by("number")
        ]
    return {
        "versions": [
            _version_summary(versions[n], with_document=True) for n in used if n in versions
        ],
        "replans": replans,
        "statuses": {str(number): steps for number, steps in statuses.items()},
        "pending": pending,
        "newer": newer,
    }


def _attach_proposals(run: Run, replans: list[dict[str, Any]]) -> None:
    """Each replan's planner transcripts (``replan: auto``): the proposals noted on the
    run after its failure and before the next one."""
    notes = RunEvent.objects.filter(
        run=run,
        event_type__in=(EventType.RUN_REPLAN_PROPOSED, EventType.RUN_REPLAN_FAILED),
    ).order_by("seq")
    by_id = {
        row.pk: row
        for row in PlannerProposal.objects.filter(run_id=run.pk).select_related(
            "requested_by", "version"
        )
    }
    for replan in replans:
        replan["proposals"] = []
    for note in notes:
        facts = note.facts if isinstance(note.facts, dict) else {}
        row = by_id.get(facts.get("proposal"))  # type: ignore[arg-type]
        owner = next((r for r in reversed(replans) if r["seq"] < note.seq), None)
        if row is not None and owner is not None:
            owner["proposals"].append(proposal_data(row))


def _version_summary(version: PlanVersion, *, with_document: bool = False) -> dict[str, Any]:
    data: dict[str, Any] = {
        "number": version.number,
        "status": version.status,
        "author": version.author.get_username(),
        "planner": version.planner,
        "note": version.note,
        "replan_reason": version.replan_reason,
        "parent": version.parent.number if version.parent_id else None,
        "created_at": version.created_at,
        "has_errors": version.has_errors,
    }
    if with_document:
        approvals: list[Approval] = list(version.approvals.all())
        data["approvals"] = [
            {
                "reviewer": approval.reviewer_name,
                "by_policy": approval.by_policy,
                "decision": approval.decision,
                "content_hash": approval.content_hash,
                "at": approval.created_at,
            }
            for approval in approvals
        ]
        data["document"] = version.document
    return data


def _failure(run: Run, event: RunEvent, version: int) -> dict[str, Any]:
    facts = event.facts or {}
    failed = str(facts.get("failed_step", ""))
    step_event = (
        RunEvent.objects.filter(run=run, step_id=failed, plan_version=version, seq__lt=event.seq)
        .order_by("-seq")
        .first()
    )
    step_run = StepRun.objects.filter(run=run, plan_version=version, step_id=failed).first()
    candidates = list(facts.get("preserved", []))
    outputs = _outputs(run, version, candidates)
    return {
        "index": 0,  # numbered by replan_story
        "seq": event.seq,
        "at": event.created_at,
        "from": version,
        "to": None,
        "failure": {
            "step": failed,
            "status": step_event.step_status if step_event is not None else "failed",
            "event": step_event.event_type if step_event is not None else "",
            "actor": step_event.actor if step_event is not None else "",
            "error": facts.get("error") or (step_run.error if step_run else ""),
            "reason": event.blocked_reason,
            "verdict": step_run.verdict if step_run is not None else None,
            "output": _pretty(step_run.output)
            if step_run is not None and step_run.output is not None
            else None,
            "tool": step_run.tool_name if step_run is not None else "",
            "attempt": step_run.attempt if step_run is not None else 0,
        },
        "reset": list(facts.get("reset", [])),
        "candidates": candidates,
        "outputs": outputs,
        "kept": _listed(candidates, outputs),
        "resume": None,
        "diff": None,
        "changes": [],
        "drift": [],
    }


def _resumed(
    run: Run, replan: dict[str, Any], event: RunEvent, versions: dict[int, PlanVersion]
) -> dict[str, Any]:
    facts = event.facts or {}
    old, new = versions.get(replan["from"]), versions.get(event.plan_version)
    diff: dict[str, Any] | None = None
    drift: list[str] = []
    if old is not None and new is not None:
        old_document, new_document = stored_document(old), stored_document(new)
        diff = diff_plans(old_document, new_document).to_data()
        drift = list(detect_drift(old_document, new_document))
    kept = list(facts.get("preserved", []))
    outputs = _outputs(run, replan["from"], kept)
    return {
        **replan,
        "to": event.plan_version,
        "resume": {
            "actor": event.actor,
            "at": event.created_at,
            "seq": event.seq,
            "preserved": kept,
            "reset": list(facts.get("reset", [])),
            "added": list(facts.get("added", [])),
            "removed": list(facts.get("removed", [])),
        },
        "outputs": outputs,
        "kept": _listed(kept, outputs),
        "diff": diff,
        "changes": _change_lines(diff) if diff is not None else [],
        "drift": drift,
    }


def _outputs(run: Run, version: int, step_ids: list[str]) -> dict[str, Any]:
    """The results the steps had in ``version``: what a resume keeps."""
    if not step_ids:
        return {}
    rows = StepRun.objects.filter(run=run, plan_version=version, step_id__in=step_ids)
    return {row.step_id: _pretty(row.output) for row in rows.only("step_id", "output")}


def _listed(step_ids: list[str], outputs: dict[str, Any]) -> list[dict[str, Any]]:
    # A list for the template: a step named "items" must not shadow dict.items there.
    return [{"step": step_id, "output": outputs.get(step_id)} for step_id in step_ids]
