"""Request and answer shapes of the runs API.

No ``from __future__ import annotations``: ninja reads these annotations at runtime.
"""

from datetime import datetime
from typing import Annotated, Any, Literal

from django.conf import settings
from ninja import Field, Schema

from forge.ids import MAX_ID
from forge.plan.limits import ID_PATTERN
from forge.runtime.status import RunStatus
from plans.schemas import DocumentIn, RuleStatusOut


class RunIn(Schema):
    plan_id: int = Field(ge=1, le=MAX_ID)
    version: int = Field(ge=1, le=2**31 - 1)
    # "agent": the run's MCP tool steps are the agent's to call through the gateway.
    executor: Literal["worker", "agent"] = "worker"


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


StepIdField = Field(pattern=f"^{ID_PATTERN.pattern}$")


class RerunIn(Schema):
    steps: list[Annotated[str, StepIdField]] = Field(
        min_length=1,
        max_length=settings.FORGE_MAX_PLAN_STEPS,
        description="the steps to run again; their descendants run again too, every other "
        "step that succeeded keeps its recorded output",
    )


class RerunQuery(Schema):
    steps: list[Annotated[str, StepIdField]] = Field(
        min_length=1, max_length=settings.FORGE_MAX_PLAN_STEPS
    )


class ApprovalNeedOut(Schema):
    step: str
    reasons: list[str]


class RerunPlanOut(Schema):
    chosen: list[str]
    steps: list[str] = Field(description="what the re-run runs again, in the plan's order")
    preserved: list[str] = Field(description="what it keeps, with the old run's outputs")
    unfinished: list[str] = Field(
        description="steps outside the chosen ones' reach that had not succeeded: run again too"
    )
    needs_approval: list[ApprovalNeedOut] = Field(
        description="steps among those run again that will wait for a person's approval"
    )


class ReconcileIn(Schema):
    status: Literal["succeeded", "failed"]
    output: Any = None
    comment: str = Field("", max_length=10_000)


class EventsQuery(Schema):
    after: int = Field(0, ge=0, le=2**31 - 1)
    limit: int = Field(1000, ge=1, le=5000)


class RunFilters(Schema):
    status: RunStatus | None = Field(None, description="the runs in this status")
    plan_id: int | None = Field(None, ge=1, le=MAX_ID)


class BudgetOut(Schema):
    used_steps: int
    used_tokens: int
    used_cost: float
    max_steps: int | None
    max_tokens: int | None
    max_cost: float | None


class StepRuleOut(RuleStatusOut):
    """One approval rule matching a waiting step, as for a version (``RuleStatusOut``)."""

    lacking: str = Field(
        description="what it still needs, in words ('needs 1 of finance'); empty once satisfied"
    )


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
    rules: list[StepRuleOut] | None = Field(
        description="for a step awaiting approval: each approval rule matching the step, "
        "with who counts toward it (SPEC section 10); null otherwise"
    )
    not_counted: list[str] = Field(
        description="people whose approval of the waiting step counts toward no matching "
        "rule (in none of the teams asked for)"
    )


class StepRulesOut(Schema):
    step_id: str
    status: str
    rules: list[StepRuleOut] | None = Field(
        description="each approval rule matching the step while it waits; null otherwise"
    )
    not_counted: list[str]


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
    blocked_reason: str = Field(
        description="why the run stops or waits; while it waits for people, each step or "
        "milestone waiting and the role that can act"
    )
    awaiting_review: list[str] = Field(description="milestones waiting for a person's review")
    rerun_of: int | None = Field(description="the run this one re-ran, if a re-run")
    rerun_steps: list[str] = Field(description="the steps a re-run was asked to run again")
    reruns: list[int] = Field(description="the runs that re-ran this one")
    executor: str = Field(
        description='"worker", or "agent": its MCP tool steps are the agent\'s to call '
        "through the gateway"
    )
    agent_steps: list[str] = Field(
        description="the steps the agent executes through the gateway (an agent's run)"
    )
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
