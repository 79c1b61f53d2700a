"""Core ``RunEvent`` values to database rows and back: one field list, one place."""

from __future__ import annotations

from forge.runtime import RunEvent
from runs import models

_FIELDS = (
    "seq",
    "plan_id",
    "plan_version",
    "step_id",
    "event_type",
    "step_status",
    "blocked_reason",
    "facts",
    "tool_name",
    "tool_args_hash",
    "permission_scope",
    "side_effect",
    "latency_ms",
    "tokens",
    "cost",
    "model",
    "verdict",
    "actor",
    "created_at",
)


def to_row(run: models.Run, event: RunEvent) -> models.RunEvent:
    row = models.RunEvent(run=run, **{name: getattr(event, name) for name in _FIELDS})
    row.transition = list(event.transition) if event.transition else None
    row.artifacts = list(event.artifacts)
    return row


def from_row(row: models.RunEvent) -> RunEvent:
    transition = row.transition
    return RunEvent(
        run_id=str(row.run_id),
        transition=(transition[0], transition[1]) if transition else None,
        artifacts=tuple(row.artifacts or ()),
        **{name: getattr(row, name) for name in _FIELDS},
    )


def to_data(row: models.RunEvent) -> dict[str, object]:
    """The event as the API and the websocket send it."""
    return from_row(row).to_data()
