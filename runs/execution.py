"""What a worker process needs to run steps: one ToolExecutor over the deployment's
tools, a record store that writes ExecutionRecords and their artifacts to the database,
the approval signer, and each run's workspace directory."""

from __future__ import annotations

import hashlib
import hmac
from functools import cache
from pathlib import Path

from django.conf import settings

from forge.runtime import ApprovalSigner, ExecutionRecord, ToolExecutor
from forge.toolbox import build_toolbox
from forge.tools import PolicyEngine
from plans.compilation import policy
from runs import models


class DatabaseRecordStore:
    """Keeps each ExecutionRecord, with its artifacts (logs, diffs), as rows."""

    def save(self, record: ExecutionRecord) -> None:
        row = models.ExecutionRecord.objects.create(
            id=record.id,
            run_id=int(record.run_id),
            step_id=record.step_id,
            attempt=record.attempt,
            tool=record.tool,
            args_hash=record.args_hash,
            status=record.status,
            error=record.error,
            error_code=record.error_code,
            exit_code=record.exit_code,
            isolation=record.isolation,
            notes=list(record.notes),
            started_at=record.started_at,
            latency_ms=record.latency_ms,
            tokens=record.tokens,
            cost=record.cost,
        )
        models.Artifact.objects.bulk_create(
            models.Artifact(
                record=row,
                name=a.name,
                media_type=a.media_type,
                content=a.content,
                size=len(a.content),
                truncated=a.truncated,
            )
            for a in record.artifacts
        )


@cache
def approval_signer() -> ApprovalSigner:
    # A key of its own, derived from SECRET_KEY, so approval tokens and sessions never
    # share a key: rotating one does not silently validate the other's signatures.
    key = hmac.new(settings.SECRET_KEY.encode(), b"forge-approval-tokens", hashlib.sha256)
    return ApprovalSigner(key.digest())


@cache
def executor() -> ToolExecutor:
    """The worker's ToolExecutor: the same tools (built-ins and installed Python tools)
    and policy the plans were compiled against."""
    toolbox = build_toolbox(python_tools=True)
    return ToolExecutor(
        toolbox.registry,
        PolicyEngine(policy()),
        DatabaseRecordStore(),
        toolbox.runners,
        approvals=approval_signer(),
    )


def workspace_for(run_id: int) -> Path:
    path = Path(settings.FORGE_WORKSPACES) / f"run-{run_id}"
    path.mkdir(parents=True, exist_ok=True)
    return path
