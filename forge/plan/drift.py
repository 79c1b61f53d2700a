"""Plan drift: a new version that drops a constraint its parent held.

A replan may change anything, but dropping a constraint (an approval requirement, a
step the deliverable depended on, a budget limit, the replan cap, the risk level, a
person writing each replan, a milestone's review) is drift, and a person must approve
the new version before a run resumes on it.
"""

from __future__ import annotations

from forge.plan.document import RISK_LEVELS, PlanDocument

__all__ = ["detect_drift"]


def detect_drift(parent: PlanDocument, child: PlanDocument) -> tuple[str, ...]:
    """What ``child`` dropped of ``parent``'s constraints, one sentence each; empty when
    nothing was dropped."""
    dropped: list[str] = []
    for scope in parent.requires_approval_before:
        if scope not in child.requires_approval_before:
            dropped.append(f"approval before {scope!r} is no longer required")
    child_ids = set(child.step_ids)
    for step_id in sorted(_deliverable_ancestors(parent) - child_ids):
        dropped.append(f"step {step_id!r}, which the deliverable depended on, was removed")
    for dimension in ("max_steps", "max_tokens", "max_cost"):
        before = getattr(parent.budget, dimension)
        after = getattr(child.budget, dimension)
        if before is not None and (after is None or after > before):
            dropped.append(f"budget {dimension} loosened from {before} to {after or 'unlimited'}")
    if child.max_replans > parent.max_replans:
        dropped.append(f"max_replans raised from {parent.max_replans} to {child.max_replans}")
    if parent.replan == "manual" and child.replan == "auto":
        dropped.append("replans became automatic (replan: auto)")
    if RISK_LEVELS.index(child.risk_level) < RISK_LEVELS.index(parent.risk_level):
        dropped.append(f"risk_level lowered from {parent.risk_level} to {child.risk_level}")
    reviewed = {milestone.id for milestone in child.milestones if milestone.review}
    for milestone in parent.milestones:
        if milestone.review and milestone.id not in reviewed:
            dropped.append(f"milestone {milestone.id!r} no longer ends in a review")
    return tuple(dropped)


def _deliverable_ancestors(document: PlanDocument) -> set[str]:
    deliverable = document.deliverable
    if deliverable is None:
        terminals = document.terminal_step_ids()
        deliverable = terminals[0] if len(terminals) == 1 else None
    depends = {step.id: step.depends_on for step in document.steps}
    if deliverable not in depends:
        return set()
    seen: set[str] = set()
    frontier = list(depends[deliverable])
    while frontier:
        step_id = frontier.pop()
        if step_id not in seen and step_id in depends:
            seen.add(step_id)
            frontier.extend(depends[step_id])
    return seen
