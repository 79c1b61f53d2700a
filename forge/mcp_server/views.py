"""What the MCP tools answer: JSON an agent can read, each with a ``next`` sentence.

Answers keep what an agent acts on (status, diagnostics with their codes, the decision
and who made it, a run's steps and events) and leave out what only costs it tokens (a
version's document, empty fields of events). ``next`` says in one sentence what the
agent can do now, with the ids filled in; it is advice, the ``status`` and ``code`` are
the facts. A refusal is ``{"error": {"status", "code", "detail", ...}, "next"}`` and the
tool result is marked ``isError``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from mcp.types import CallToolResult, TextContent

from forge.client import Compiled, Event, ForgeApiError, Run, Version

__all__ = ["answer", "compiled", "events", "refusal", "run", "version", "waited"]

# The gate's refusals (forge.runtime.gate) and the plans' (409 on the web).
_GATE_CODES = ("self_approval", "approval_invalid", "approval_mismatch", "content_changed")
_ERROR_NEXT = {
    "not_approved": "A person other than you must approve this version first: "
    "call wait_for_approval, then start_run again.",
    "has_errors": "This version does not compile: fix the errors in diagnostics and call "
    "submit_plan with this plan_id to propose a new version.",
    "not_submitted": "This version is a draft and cannot be reviewed or run.",
    "superseded": "A newer version of this plan was submitted: this one can never be "
    "approved or run. Use the version the error names (superseded_by).",
    "permission_denied": "Your API token's user lacks the role this needs; ask a Forge admin.",
    "not_authenticated": "The API token is missing, wrong or revoked; ask for a new one.",
    "not_found": "No such plan, version or run: check the ids.",
    "validation_error": "The arguments were refused: see errors for which and why.",
    "invalid_arguments": "Fix the arguments as detail says and call the tool again.",
    "unreachable": "Forge did not answer; try again later.",
    "timeout": "Forge did not answer in time; try again later.",
    **dict.fromkeys(
        _GATE_CODES,
        "The version's approval does not hold for what would run; a person must review "
        "and approve the version again.",
    ),
}


def answer(data: Mapping[str, Any], *, error: bool = False) -> CallToolResult:
    """``data`` as the tool's structured content and as JSON text, for clients that read
    only text."""
    text = json.dumps(data, ensure_ascii=False, indent=1, default=str)
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=dict(data),
        is_error=error,
    )


def refusal(error: ForgeApiError) -> CallToolResult:
    """``{"error": {"status", "code", "detail", ...}, "next"}``; no ``status`` when no
    HTTP answer came (Forge unreachable, or the tool refused the arguments itself)."""
    refused = {k: v for k, v in error.to_data().items() if not (k == "status" and v == 0)}
    data: dict[str, Any] = {"error": _without_empty(refused)}
    if error.code in _ERROR_NEXT:
        data["next"] = _ERROR_NEXT[error.code]
    return answer(data, error=True)


def compiled(result: Compiled) -> dict[str, Any]:
    return {
        "ok": result.ok,
        "diagnostics": [d.to_data() for d in result.diagnostics],
        "graph": result.graph,
        "next": "It compiles: propose it with submit_plan."
        if result.ok
        else "Fix the errors in diagnostics and compile again.",
    }


def version(found: Version) -> dict[str, Any]:
    decision = found.decision
    data: dict[str, Any] = {
        "plan_id": found.plan_id,
        "version": found.number,
        "status": found.status,
        "author": found.author,
        "has_errors": found.has_errors,
        "content_hash": found.content_hash,
        "parent": found.parent,
        "superseded_by": found.superseded_by,
        "diagnostics": [d.to_data() for d in found.diagnostics],
        "decision": None
        if decision is None
        else {
            "decision": decision.decision,
            "reviewer": decision.reviewer,
            "by_policy": decision.by_policy,
            "comment": decision.comment,
            "at": decision.created_at,
        },
        "next": _version_next(found),
    }
    return data


def waited(found: Version, waited_s: float) -> dict[str, Any]:
    """A version after ``wait_for_approval``: ``timed_out`` when it still waits."""
    return {**version(found), "timed_out": found.waiting, "waited_s": round(waited_s, 1)}


def _version_next(found: Version) -> str:
    ids = f"plan_id={found.plan_id}, version={found.number}"
    decision = found.decision
    by = "" if decision is None else f" by {decision.reviewer}"
    match found.status:
        case "awaiting_approval":
            if found.waiting_for:  # who must approve, as the approval rules say
                lacking = "; ".join(found.waiting_for)
                return f"A person must decide ({lacking}): call wait_for_approval with {ids}."
            return f"A person must decide: call wait_for_approval with {ids}."
        case "approved":
            return f"Approved{by}: call start_run with {ids}."
        case "rejected":
            why = f' ("{decision.comment}")' if decision is not None and decision.comment else ""
            return (
                f"Rejected{by}{why}: revise the plan and call submit_plan with "
                f"plan_id={found.plan_id} to propose a new version."
            )
        case "has_errors":
            return (
                "It does not compile and can never be approved: fix the errors in diagnostics "
                f"and call submit_plan with plan_id={found.plan_id}."
            )
        case "draft":
            return "A draft: no one can review it until it is submitted in Forge."
        case "superseded":
            newer = f"plan_id={found.plan_id}, version={found.superseded_by}"
            return (
                f"Superseded by v{found.superseded_by}, submitted while it waited: it can "
                f"never be approved or run. Call wait_for_approval with {newer}."
            )
    return ""


def run(found: Run) -> dict[str, Any]:
    steps = [
        _without_empty(
            {
                "id": step.step_id,
                "status": step.status,
                "tool": step.tool,
                "attempt": step.attempt,
                "error": step.error,
                "approved_by": step.approved_by,
                "output": step.output,
                "waits_for": None if step.preview is None else step.preview.get("summary"),
            }
        )
        for step in found.steps
    ]
    return {
        "run_id": found.id,
        "plan_id": found.plan_id,
        "version": found.version,
        "status": found.status,
        "finished": found.finished,
        "started_by": found.started_by,
        "last_seq": found.last_seq,
        "failed_step": found.failed_step or None,
        "blocked_reason": found.blocked_reason or None,
        **({"executor": "agent"} if found.executor == "agent" else {}),
        "steps": steps,
        "next": _run_next(found),
    }


def _run_next(found: Run) -> str:
    follow = f"call run_events with run_id={found.id}, after={found.last_seq} to follow it"
    match found.status:
        case "succeeded" | "failed" | "budget_exhausted" | "cancelled":
            return f"The run is over ({found.status})."
        case "awaiting_approval":
            return f"A step waits for a person's approval in Forge; {follow}."
        case "needs_replan":
            return (
                f"Step {found.failed_step or '?'} failed and the run stopped: propose a fix "
                f"with submit_plan (plan_id={found.plan_id}); once a person approves it, a "
                "person resumes the run in Forge."
            )
    if found.executor == "agent" and found.status == "running":
        ready = [step.step_id for step in found.steps if step.status == "ready"]
        if ready:
            return (
                f"Execute step(s) {', '.join(ready)} through Forge's gateway: call each "
                'step\'s tool with its arguments and _meta {"forge/run": '
                f'{found.id}, "forge/step": STEP}}; {follow}.'
            )
    return f"The run is {found.status}; {follow}."


def events(run_id: int, found: tuple[Event, ...], after: int, limit: int) -> dict[str, Any]:
    last = found[-1].seq if found else after
    more = len(found) == limit
    finished = any(event.event_type in _FINAL_EVENTS for event in found)
    if more:
        hint = f"More events wait: call run_events with run_id={run_id}, after={last}."
    elif finished:
        hint = "The run is over."
    else:
        hint = f"Nothing newer yet: call run_events with run_id={run_id}, after={last} later."
    return {
        "run_id": run_id,
        "events": [_without_empty(dict(event.data)) for event in found],
        "last_seq": last,
        "more": more,
        "next": hint,
    }


_FINAL_EVENTS = frozenset({"run_succeeded", "run_failed", "run_budget_exhausted", "run_cancelled"})


def _without_empty(data: Mapping[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in data.items() if value not in (None, "", [], {})}
