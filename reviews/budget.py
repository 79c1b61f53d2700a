"""A version's static budget estimate as its review card shows it: the compiler's own
figures (``forge.compiler.budget.estimate_budget``, the ones its
``budget_exceeded_statically`` warnings and the impact summary read), each with its share
of the plan's limit."""

from __future__ import annotations

from typing import Any

from forge.compiler.budget import estimate_budget
from forge.plan import PlanDocument

__all__ = ["budget_rows"]

_LABELS = {"steps": "Steps", "tokens": "Tokens", "cost": "Cost"}


def budget_rows(document: PlanDocument) -> list[dict[str, Any]]:
    """One row per dimension (its estimate, limit, whether it is over, its share of the
    limit in percent), then how many steps carry an estimate."""
    estimate = estimate_budget(document)
    rows: list[dict[str, Any]] = [
        {
            "name": line.name,
            "label": _LABELS[line.name],
            "estimate": round(line.estimate, 4) if line.name == "cost" else line.estimate,
            "limit": line.limit,
            "over": line.over,
            "share": None if not line.limit else min(100, round(100 * line.estimate / line.limit)),
        }
        for line in estimate.lines
    ]
    return [*rows, {"name": "estimated", "value": estimate.estimated_steps, "of": estimate.steps}]
