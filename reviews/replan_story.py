"""How a run came to its current version, for its replan view (``/runs/<id>/replans/``):
read from the run's events, ``run_needs_replan`` (what failed, what starts over) and
``run_resumed`` (who continued on which version, what was kept), with the versions'
diff and drift computed from their stored documents. Read-only."""

from __future__ import annotations

from typing import Any

from forge.plan import diff_plans
from forge.plan.diff_text import change_lines
from forge.plan.drift import detect_drift
from forge.runtime.events import EventType
from plans.compilation import stored_document
from plans.impact import version_pauses
from plans.models import Approval, PlannerProposal, PlanVersion
from plans.planning import proposal_data
from reviews.step_values import shown
from runs.models import Run, RunEvent, StepRun

__all__ = ["replan_story"]


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
        # Which steps will pause, and why, for the step details (None: it has errors).
        data["pauses"] = None if version.has_errors else version_pauses(version)
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
            "output": shown(step_run.output)
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
        "changes": change_lines(diff) if diff is not None else [],
        "drift": drift,
    }


def _outputs(run: Run, version: int, step_ids: list[str]) -> dict[str, Any]:
    """The results the steps had in ``version``: what a resume keeps."""
    if not step_ids:
        return {}
    rows = StepRun.objects.filter(run=run, plan_version=version, step_id__in=step_ids)
    return {row.step_id: shown(row.output) for row in rows.only("step_id", "output")}


def _listed(step_ids: list[str], outputs: dict[str, Any]) -> list[dict[str, Any]]:
    # A list for the template: a step named "items" must not shadow dict.items there.
    return [{"step": step_id, "output": outputs.get(step_id)} for step_id in step_ids]
