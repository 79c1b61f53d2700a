"""The gateway API's bodies and answers."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from ninja import Field, Schema

from forge.ids import MAX_ID
from gateway.models import HeldStatus

__all__ = [
    "CallIn",
    "CallOut",
    "DecisionIn",
    "GatewayToolOut",
    "HeldCallFilters",
    "HeldCallOut",
    "HeldCallStatusOut",
]


class GatewayToolOut(Schema):
    name: str
    server: str
    remote_name: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    annotations: dict[str, Any]
    side_effect: str
    idempotent: bool


class CallIn(Schema):
    tool: str = Field(min_length=1, max_length=200)
    arguments: dict[str, Any] = Field(default_factory=dict)
    # A bound call: the run (started with executor "agent") and the step it executes.
    run: int | None = Field(None, ge=1, le=MAX_ID)
    step: str | None = Field(None, min_length=1, max_length=64)


class CallOut(Schema):
    held_call: int | None = None
    tool: str
    run: int | None
    step: str | None
    is_error: bool
    structured: bool
    output: Any
    error: str
    error_code: str
    step_status: str | None
    run_status: str | None


class DecisionIn(Schema):
    comment: str = Field("", max_length=10_000)


class HeldCallFilters(Schema):
    status: HeldStatus | None = None


class HeldCallStatusOut(Schema):
    id: int
    status: str


class HeldCallOut(Schema):
    id: int
    status: str
    server: str
    tool: str
    annotations: dict[str, Any]
    arguments: dict[str, Any]
    args_hash: str
    side_effect: str
    preview: str
    rules: list[dict[str, Any]]
    approvals: list[dict[str, Any]]
    asked_by: str
    created_at: datetime
    expires_at: datetime
    decided_by: str | None
    decided_at: datetime | None
    comment: str
    rules_version: int
    answered: bool
