"""Execution records: what one tool call did, kept by an ``ExecutionRecordStore``."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal, Protocol

from forge.runners.base import Artifact

__all__ = ["ExecutionRecord", "ExecutionRecordStore", "InMemoryRecordStore"]


@dataclass(frozen=True)
class ExecutionRecord:
    """One attempt of one step: refused before the runner, or run and then normalised."""

    id: str
    run_id: str
    step_id: str
    attempt: int
    tool: str
    args_hash: str
    status: Literal["succeeded", "failed", "refused"]
    error: str = ""
    error_code: str = ""
    exit_code: int | None = None
    isolation: str = "none"
    artifacts: tuple[Artifact, ...] = ()
    notes: tuple[str, ...] = ()
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    latency_ms: float = 0.0
    tokens: int = 0
    cost: float = 0.0


class ExecutionRecordStore(Protocol):
    def save(self, record: ExecutionRecord) -> None: ...


class InMemoryRecordStore:
    """Keeps records in a list: for local runs and tests."""

    def __init__(self) -> None:
        self.records: list[ExecutionRecord] = []

    def save(self, record: ExecutionRecord) -> None:
        self.records.append(record)

    def for_step(self, step_id: str) -> list[ExecutionRecord]:
        return [record for record in self.records if record.step_id == step_id]
