"""Milestones: a long plan in phases, each optionally ending in a person's review.

The plan's ``milestones`` list phases in run order. When a plan has any, every step
belongs to exactly one; a milestone names only steps of the plan and at least one, and
no step may depend on a step of a later milestone (it could never run: that milestone
waits for the review of this one). Each such problem is ``invalid_milestone`` or, for an
edge against the order, ``milestone_out_of_order`` (errors, with the edge to remove). A
plan of more than ``warn_steps`` steps without milestones draws
``plan_without_milestones`` (a warning with a hint): fifty steps at once are more than a
reviewer can hold in mind.

``review_holds`` is what the Scheduler enforces: a step of milestone *k* is held until
every earlier milestone that ends in a review has been reviewed.
"""

from __future__ import annotations

from collections.abc import Mapping

from forge.compiler.diagnostics import Diagnostic, name_list
from forge.compiler.structure import Structure
from forge.plan import PlanDocument

__all__ = ["DEFAULT_WARN_STEPS", "check_milestones", "milestone_index", "review_holds"]

DEFAULT_WARN_STEPS = 50

_MILESTONES_HINT = (
    "group the steps into milestones of a few steps each, with review: true where a person "
    "should look at the facts before the run goes on: "
    "milestones: [{id: gather, title: Gather the data, steps: [a, b], review: true}, ...]"
)


def milestone_index(document: PlanDocument) -> dict[str, int]:
    """Each listed step's milestone, by position (the first milestone naming it)."""
    index: dict[str, int] = {}
    for position, milestone in enumerate(document.milestones):
        for step_id in milestone.steps:
            index.setdefault(step_id, position)
    return index


def review_holds(document: PlanDocument) -> Mapping[str, tuple[str, ...]]:
    """For each step held by a review, the ids of the earlier milestones that end in one.
    Steps of the first milestone, and of a plan without milestones, are held by none."""
    holds: dict[str, tuple[str, ...]] = {}
    before: list[str] = []
    for milestone in document.milestones:
        if before:
            held = tuple(before)
            for step_id in milestone.steps:
                holds.setdefault(step_id, held)
        if milestone.review:
            before.append(milestone.id)
    return holds


def check_milestones(
    document: PlanDocument, structure: Structure, warn_steps: int = DEFAULT_WARN_STEPS
) -> list[Diagnostic]:
    milestones = document.milestones
    if not milestones:
        if warn_steps and len(document.steps) > warn_steps:
            message = (
                f"plan has {len(document.steps)} steps and no milestones: a reviewer approves "
                f"them all at once (more than {warn_steps} steps draws this warning)"
            )
            return [Diagnostic.of("plan_without_milestones", message, hint=_MILESTONES_HINT)]
        return []
    out: list[Diagnostic] = []
    seen_ids: set[str] = set()
    owner: dict[str, str] = {}
    known = structure.steps
    for milestone in milestones:
        if milestone.id in seen_ids:
            out.append(_invalid(f"milestone id {milestone.id!r} is used twice"))
        seen_ids.add(milestone.id)
        if not milestone.steps:
            out.append(_invalid(f"milestone {milestone.id!r} names no step"))
        unknown = [step_id for step_id in milestone.steps if step_id not in known]
        if unknown:
            out.append(
                _invalid(f"milestone {milestone.id!r} names unknown step(s) {name_list(unknown)}")
            )
        for step_id in dict.fromkeys(milestone.steps):
            if step_id not in known:
                continue
            first = owner.setdefault(step_id, milestone.id)
            if first != milestone.id:
                message = (
                    f"step {step_id!r} is in two milestones, {first!r} and {milestone.id!r}; "
                    "a step belongs to one"
                )
                out.append(_invalid(message, (step_id,)))
    outside = [step_id for step_id in known if step_id not in owner]
    if outside:
        message = (
            f"{len(outside)} step(s) are in no milestone ({name_list(outside)}): when a plan "
            "has milestones, each step belongs to one"
        )
        out.append(_invalid(message, outside))
    position = milestone_index(document)
    for step_id, deps in structure.depends_on.items():
        mine = position.get(step_id)
        if mine is None:
            continue
        for dep in deps:
            theirs = position.get(dep)
            if theirs is not None and theirs > mine:
                message = (
                    f"step {step_id!r} (milestone {milestones[mine].id!r}) depends on "
                    f"{dep!r} of the later milestone {milestones[theirs].id!r}; move one of "
                    "them, or drop the dependency"
                )
                out.append(
                    Diagnostic.of(
                        "milestone_out_of_order", message, (step_id, dep), ((dep, step_id),)
                    )
                )
    return out


def _invalid(message: str, nodes: tuple[str, ...] | list[str] = ()) -> Diagnostic:
    return Diagnostic.of("invalid_milestone", message, nodes)
