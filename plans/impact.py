"""A version's impact as the pages show it: what it will touch, ask, cost and take
(``forge.compiler.impact``), and what changed from another version.

The impact is stored with each version when it is saved (``PlanVersion.impact``); a
version saved before impacts were kept is compiled again, with the tools as they are,
and one with compile errors has none.
"""

from __future__ import annotations

from typing import Any

from forge.compiler import Impact, compare_impact
from forge.compiler.impact import duration_text, seconds_text
from forge.tools import WRITE_CLASSES
from plans.compilation import compile_version
from plans.models import PlanVersion

__all__ = ["impact_changes", "impact_view", "version_impact", "version_pauses"]


def version_impact(version: PlanVersion) -> Impact | None:
    # An impact stored before it listed its tools is computed again: a rule on tools
    # must never miss one because the stored summary was older than the rule.
    if version.impact is not None and "tools" in version.impact:
        return Impact.from_data(version.impact)
    if version.has_errors:
        return None
    return compile_version(version, refresh=False).impact


def impact_view(impact: Impact | None) -> dict[str, Any] | None:
    """Plain data for ``plans/_impact.html``."""
    if impact is None:
        return None
    duration = impact.duration
    return {
        "steps": impact.steps,
        "scopes": list(impact.scopes),
        "side_effects": [
            {"name": effect, "count": count, "changes": effect in WRITE_CLASSES}
            for effect, count in impact.side_effects
        ],
        "agent_steps": impact.agent_steps,
        "hosts": list(impact.hosts),
        "hosts_unknown": list(impact.hosts_unknown),
        "mcp": [{"server": use.server, "tools": list(use.tools)} for use in impact.mcp],
        "files": list(impact.files_written),
        "files_unknown": list(impact.files_unknown),
        "commands": list(impact.commands),
        "pauses": [{"step": p.step, "reasons": list(p.reasons)} for p in impact.pauses],
        "reviews": list(impact.reviews),
        "approvals": 1 + len(impact.pauses) + len(impact.reviews),
        "tokens": impact.tokens,
        "cost": round(impact.cost, 4),
        "estimated_steps": impact.estimated_steps,
        "duration": duration_text(duration),
        "duration_seconds": seconds_text(duration.seconds),
        "duration_path": list(duration.path),
        "duration_unknown": list(duration.unknown),
    }


def impact_changes(old: PlanVersion, new: PlanVersion) -> list[str]:
    """What ``new`` touches, asks, costs or takes that ``old`` did not (and the reverse),
    one sentence each; empty when either has no impact (compile errors)."""
    before, after = version_impact(old), version_impact(new)
    if before is None or after is None:
        return []
    return list(compare_impact(before, after))


def version_pauses(version: PlanVersion) -> list[dict[str, Any]] | None:
    """The steps of ``version`` that will wait for a person's approval, each with why
    (``{"step", "reasons"}``, from its stored ``approval_required`` diagnostics); ``None``
    for a version with compile errors, whose pauses are not known."""
    if version.has_errors:
        return None
    return [_pause(item) for item in version.diagnostics if item.get("code") == "approval_required"]


def _pause(diagnostic: dict[str, Any]) -> dict[str, Any]:
    # The compiler's message is "step 'x' will wait for approval: reason; reason".
    message = str(diagnostic.get("message", ""))
    _, found, reasons = message.partition("will wait for approval: ")
    nodes = diagnostic.get("nodes") or [""]
    return {"step": nodes[0], "reasons": reasons.split("; ") if found else [message]}
