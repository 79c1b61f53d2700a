"""Request and answer shapes of the runs API.

No ``from __future__ import annotations``: ninja reads these annotations at runtime.
"""

from datetime import datetime
from typing import Any, Literal

from ninja import Field, Schema

from plans.schemas import DocumentIn


class RunIn(Schema):
    plan_id: int = Field(ge=1, le=2**63 - 1)
    version: int = Field(ge=1, le=2**31 - 1)


class CommentIn(Schema):
    comment: str = Field("", max_length=10_000)


class StepDecisionIn(CommentIn):
    preview_hash: str | None = Field(
        None,
        pattern=r"^[0-9a-f]{64}$",
        description="the hash of the preview the approver saw; refused (409 preview_changed) "
        "when the step shows another one now",
    )


class ReplanIn(DocumentIn):
    note: str = Field("", max_length=10_000, description="what changed and why")
    replan_reason: str = Field(
        "", max_length=10_000, description="why the run needs it; defaults to what failed"
    )


class ResumeIn(Schema):
    version: int = Field(ge=1, le=2**31 - 1)


class ReconcileIn(Schema):
    status: Literal["succeeded", "failed"]
    output: Any = None
    comment: str = Field("", max_length=10_000)


class EventsQuery(Schema):
    after: int = Field(0, ge=0, le=2**31 - 1)
    limit: int = Field(1000, ge=1, le=5000)


class RunFilters(Schema):
    status: str | None = Field(None, max_length=20)
    plan_id: int | None = Field(None, ge=1, le=2**63 - 1)


class BudgetOut(Schema):
    used_steps: int
    used_tokens: int
    used_cost: float
    max_steps: int | None
    max_tokens: int | None
    max_cost: float | None


class StepOut(Schema):
    step_id: str
    plan_version: int
    status: str
    attempt: int
    tool: str
    args_hash: str
    depends_on: list[str]
    output: Any
    error: str
    verdict: Any
    tokens: int
    cost: float
    approved_by: str
    started_at: datetime | None
    finished_at: datetime | None
    latency_ms: float | None
    artifacts: list[dict[str, Any]] = Field(
        description="what the attempt that settled the step left: name, media_type, size, "
        "truncated, record (the execution record keeping it)"
    )
    preview: dict[str, Any] | None = Field(
        description="for a step awaiting approval: what it will do (kind, summary, text, hash)"
    )


class RunSummaryOut(Schema):
    id: int
    plan_id: int
    plan_name: str
    version: int
    status: str
    started_by: str
    created_at: datetime
    finished_at: datetime | None
    replans: int
    last_seq: int


class RunOut(RunSummaryOut):
    budget: BudgetOut
    max_replans: int
    failed_step: str
    reset: list[str]
    preserved: list[str]
    blocked_reason: str
    steps: list[StepOut]


class ArtifactOut(Schema):
    id: int
    name: str
    media_type: str
    size: int
    truncated: bool


class RecordOut(Schema):
    id: str
    step_id: str
    attempt: int
    tool: str
    args_hash: str
    status: str
    error: str
    error_code: str
    exit_code: int | None
    isolation: str
    notes: list[str]
    started_at: datetime
    latency_ms: float
    tokens: int
    cost: float
    artifacts: list[ArtifactOut]
