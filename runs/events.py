"""Core ``RunEvent`` values to database rows and back: one field list, one place."""

from __future__ import annotations

from collections.abc import Sequence

from forge.runtime import RunEvent
from runs import models
from runs.sql import Insert, Select, Statement

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


_insert = Insert(models.RunEvent, ("run", *_FIELDS, "transition", "artifacts"))


def insert(run_id: int, events: Sequence[RunEvent]) -> list[Statement]:
    """The statements that write ``events`` of run ``run_id``."""
    return _insert.statements(
        [
            (
                run_id,
                *[getattr(event, name) for name in _FIELDS],
                list(event.transition) if event.transition else None,
                list(event.artifacts),
            )
            for event in events
        ]
    )


_COLUMNS = (*_FIELDS, "transition", "artifacts")
_after = Select(models.RunEvent, _COLUMNS, ("run",), after="seq")
_next = Select(models.RunEvent, _COLUMNS, ("run",), after="seq", limited=True)


def after(run_id: int, seq: int, limit: int | None = None) -> list[RunEvent]:
    """The events of run ``run_id`` after ``seq``, in order (all of them after 0), at
    most ``limit`` of them."""
    run = str(run_id)
    rows = _after.rows(run_id, seq) if limit is None else _next.rows(run_id, seq, limit)
    events = []
    for row in rows:
        *values, transition, artifacts = row
        events.append(
            RunEvent(
                run_id=run,
                transition=(transition[0], transition[1]) if transition else None,
                artifacts=tuple(artifacts or ()),
                **dict(zip(_FIELDS, values, strict=True)),
            )
        )
    return events


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
