"""What changed between two versions of a plan: steps, edges and plan-level fields.

Steps are matched by id (the first step with an id, should a draft repeat one). Edges are
``(dependency, dependent)`` pairs, the direction they are drawn in. Values in the diff are
plain data (lists, dicts, numbers, strings), ready for JSON and for exact comparison.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, is_dataclass
from typing import Any

import msgspec

from forge.plan.diff_text import field_lines
from forge.plan.document import PlanDocument, Step

__all__ = ["FieldChange", "PlanDiff", "StepChange", "diff_plans"]

Edge = tuple[str, str]
_PLAN_FIELDS = ("goal", "deliverable", "risk_level", "requires_approval_before", "budget",
                "max_replans", "replan", "milestones")  # fmt: skip
_STEP_FIELDS = tuple(name for name in Step.__struct_fields__ if name != "id")


@dataclass(frozen=True)
class FieldChange:
    field: str
    before: Any
    after: Any

    @property
    def lines(self) -> list[str]:
        """The change as a reviewer reads it (``forge.plan.diff_text``)."""
        return field_lines(self.field, self.before, self.after)

    def to_data(self) -> dict[str, Any]:
        return {"field": self.field, "before": self.before, "after": self.after,
                "lines": self.lines}  # fmt: skip


@dataclass(frozen=True)
class StepChange:
    """A step present in both versions, with its changed fields in ``Step``'s field order."""

    step_id: str
    changes: tuple[FieldChange, ...]

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(change.field for change in self.changes)

    def to_data(self) -> dict[str, Any]:
        return {"id": self.step_id, "changes": [change.to_data() for change in self.changes]}


@dataclass(frozen=True)
class PlanDiff:
    """Step ids, step changes and edges as sorted tuples; plan changes in field order."""

    added_steps: tuple[str, ...] = ()
    removed_steps: tuple[str, ...] = ()
    changed_steps: tuple[StepChange, ...] = ()
    added_edges: tuple[Edge, ...] = ()
    removed_edges: tuple[Edge, ...] = ()
    plan_changes: tuple[FieldChange, ...] = ()

    @property
    def is_empty(self) -> bool:
        return not (self.added_steps or self.removed_steps or self.changed_steps
                    or self.added_edges or self.removed_edges or self.plan_changes)  # fmt: skip

    def to_data(self) -> dict[str, Any]:
        return {
            "added_steps": list(self.added_steps),
            "removed_steps": list(self.removed_steps),
            "changed_steps": [change.to_data() for change in self.changed_steps],
            "added_edges": [list(edge) for edge in self.added_edges],
            "removed_edges": [list(edge) for edge in self.removed_edges],
            "plan_changes": [change.to_data() for change in self.plan_changes],
        }


def diff_plans(old: PlanDocument, new: PlanDocument) -> PlanDiff:
    """The changes that turn ``old`` into ``new``."""
    old_steps, new_steps = _by_id(old), _by_id(new)
    old_edges, new_edges = _edges(old), _edges(new)
    return PlanDiff(
        added_steps=tuple(sorted(new_steps.keys() - old_steps.keys())),
        removed_steps=tuple(sorted(old_steps.keys() - new_steps.keys())),
        changed_steps=tuple(
            StepChange(step_id, changes)
            for step_id in sorted(old_steps.keys() & new_steps.keys())
            if (changes := _changes(old_steps[step_id], new_steps[step_id], _STEP_FIELDS))
        ),
        added_edges=tuple(sorted(new_edges - old_edges)),
        removed_edges=tuple(sorted(old_edges - new_edges)),
        plan_changes=_changes(old, new, _PLAN_FIELDS),
    )


def _by_id(document: PlanDocument) -> dict[str, Step]:
    steps: dict[str, Step] = {}
    for step in document.steps:
        steps.setdefault(step.id, step)
    return steps


def _edges(document: PlanDocument) -> set[Edge]:
    return {(dep, step.id) for step in document.steps for dep in step.depends_on}


def _changes(old: object, new: object, names: tuple[str, ...]) -> tuple[FieldChange, ...]:
    changes = []
    for name in names:
        before, after = _plain(getattr(old, name)), _plain(getattr(new, name))
        # Compared as plain data, so (1,) and [1], or 5 and 5.0, are no change.
        if before != after:
            changes.append(FieldChange(name, before, after))
    return tuple(changes)


def _plain(value: Any) -> Any:
    if isinstance(value, msgspec.Struct):  # a step's done_when or estimate
        return _plain(msgspec.structs.asdict(value))
    if is_dataclass(value) and not isinstance(value, type):
        return _plain(asdict(value))
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value
