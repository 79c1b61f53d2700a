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

__all__ = ["impact_changes", "impact_view", "version_impact"]


def version_impact(version: PlanVersion) -> Impact | None:
    if version.impact is not None:
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
