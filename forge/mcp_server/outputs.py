"""The shapes of the MCP tools' answers (``forge.mcp_server.views``), declared as each
tool's ``outputSchema`` so a client knows the fields before it calls, and the SDK checks
every successful answer against them. A refusal (``isError``) has the error shape
instead, which MCP leaves unchecked."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

__all__ = ["CompiledOut", "EventsOut", "RunOut", "VersionOut", "WaitedOut"]

Next = Field(description="What the agent can do now, in one sentence with the ids filled in.")


class DiagnosticOut(BaseModel):
    code: str = Field(description="Stable code of the problem (e.g. unknown_tool, cycle).")
    severity: str = Field(description="error, warning or info.")
    message: str
    nodes: list[str] = Field(default_factory=list, description="The steps concerned.")
    edges: list[list[str]] = Field(default_factory=list)
    hint: str | None = None


class CompiledOut(BaseModel):
    ok: bool = Field(description="Whether the plan compiles (no error diagnostic).")
    diagnostics: list[DiagnosticOut]
    graph: dict[str, Any] | None = Field(
        description="When it compiles: each step's tool, side effect and approval_reasons."
    )
    next: str = Next


class DecisionOut(BaseModel):
    decision: str = Field(description="approved, rejected or changes_requested.")
    reviewer: str
    by_policy: bool
    comment: str
    at: str


class VersionOut(BaseModel):
    plan_id: int
    version: int
    status: Literal[
        "draft", "has_errors", "awaiting_approval", "approved", "rejected",
        "changes_requested", "superseded",
    ]  # fmt: skip
    author: str
    has_errors: bool
    content_hash: str
    parent: int | None
    superseded_by: int | None
    diagnostics: list[DiagnosticOut]
    decision: DecisionOut | None = Field(description="The latest decision, or null.")
    next: str = Next


class WaitedOut(VersionOut):
    timed_out: bool = Field(description="Still awaiting approval: call again to wait longer.")
    waited_s: float


class StepOut(BaseModel):
    id: str
    status: str
    tool: str | None = None
    attempt: int | None = None
    error: str | None = None
    approved_by: str | None = None
    output: Any = None
    waits_for: Any = Field(None, description="Why it waits for a person, when it does.")


class RunOut(BaseModel):
    run_id: int
    plan_id: int
    version: int
    status: str = Field(
        description="queued, running, awaiting_approval, needs_replan, succeeded, failed, "
        "budget_exhausted or cancelled."
    )
    finished: bool
    started_by: str
    last_seq: int = Field(description="The seq of its newest event (run_events' after).")
    failed_step: str | None
    blocked_reason: str | None
    executor: Literal["agent"] | None = Field(
        None, description='"agent" when the agent executes its tool steps through the gateway.'
    )
    steps: list[StepOut]
    next: str = Next


class EventsOut(BaseModel):
    run_id: int
    events: list[dict[str, Any]] = Field(description="Oldest first, each with its seq.")
    last_seq: int
    more: bool = Field(description="More events wait: call again with after=last_seq.")
    next: str = Next
