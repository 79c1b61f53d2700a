"""Why a planner's answer went back, in words a person waiting for it reads ("the last
answer had a cycle"), from an attempt's code and compile diagnostics
(``forge.planners.proposals.Attempt.to_data``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["why_refused"]

# What an answer did, for each compile error a planner is likely to make (SPEC section 4).
_DID: Mapping[str, str] = {
    "cycle": "had a cycle",
    "missing_dependency": "depended on a step it does not have",
    "duplicate_id": "used one step id twice",
    "unknown_tool": "named a tool that does not exist",
    "agent_without_tools": "had a step with no tool",
    "tool_unavailable": "named a tool whose server does not answer",
    "unauthorized_tool": "used a tool the policy does not allow",
    "invalid_args": "gave a tool arguments it does not take",
    "invalid_check": "had a done_when check that is not JMESPath",
    "invalid_reference": "took a value from a step it cannot read",
    "invalid_milestone": "had milestones that do not fit its steps",
    "milestone_out_of_order": "had a milestone out of order",
    "nonterminal_deliverable": "named a deliverable other steps depend on",
    "missing_deliverable": "left its deliverable out",
}


def why_refused(attempt: Mapping[str, Any]) -> str:
    """Why ``attempt`` was refused ("the last answer ..."); empty when it compiled."""
    code = attempt.get("code", "")
    if not code:
        return ""
    if code != "does_not_compile":
        return f"the last answer was not a plan document ({code})"
    errors = [d["code"] for d in attempt.get("diagnostics", ()) if d.get("severity") == "error"]
    if not errors:
        return "the last answer did not compile"
    first = errors[0]
    did = _DID.get(first)
    words = f"the last answer {did}" if did else f"the last answer did not compile ({first})"
    more = len(errors) - 1
    return words + (f", and {more} more problem{'s' if more > 1 else ''}" if more else "")
