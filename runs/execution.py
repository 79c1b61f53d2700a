"""What a worker process needs to run steps: one ToolExecutor over the deployment's
tools (verifying approvals with ``plans.gate``'s key), a record store that writes
ExecutionRecords and their artifacts to the database, and each run's workspace
directory."""

from __future__ import annotations

import os
import threading
from functools import cache
from pathlib import Path

from django.conf import settings

from forge.agents import AgentRunner
from forge.models.config import Endpoint, model_from_spec
from forge.runners import Limits
from forge.runtime import ExecutionRecord, ToolExecutor
from forge.toolbox import build_toolbox
from forge.tools import PolicyEngine
from plans.compilation import policy
from plans.gate import approval_signer
from runs import models


class DatabaseRecordStore:
    """Keeps each ExecutionRecord, with its artifacts (logs, diffs), as rows.

    Records wait in memory (per thread) until the worker records the step's result, and
    are written in that same transaction: one commit per step instead of two, and a
    record never stands without the decision it led to. A worker that dies before then
    loses its record along with its result; the step is retried or reconciled.
    """

    _pending = threading.local()

    def save(self, record: ExecutionRecord) -> None:
        pending = getattr(self._pending, "records", None)
        if pending is None:
            pending = self._pending.records = []
        pending.append(record)

    @classmethod
    def take_pending(cls) -> list[ExecutionRecord]:
        records: list[ExecutionRecord] = getattr(cls._pending, "records", None) or []
        cls._pending.records = []
        return records


def take_pending_records() -> list[ExecutionRecord]:
    """The records this thread's executor kept since the last call."""
    return DatabaseRecordStore.take_pending()


def write_records(records: list[ExecutionRecord]) -> None:
    """Write execution records and their artifacts (inside the caller's transaction)."""
    if records:
        models.ExecutionRecord.objects.bulk_create(
            models.ExecutionRecord(
                id=r.id,
                run_id=int(r.run_id),
                step_id=r.step_id,
                attempt=r.attempt,
                tool=r.tool,
                args_hash=r.args_hash,
                status=r.status,
                error=r.error,
                error_code=r.error_code,
                exit_code=r.exit_code,
                isolation=r.isolation,
                notes=list(r.notes),
                started_at=r.started_at,
                latency_ms=r.latency_ms,
                tokens=r.tokens,
                cost=r.cost,
            )
            for r in records
        )
        models.Artifact.objects.bulk_create(
            models.Artifact(
                record_id=r.id,
                name=a.name,
                media_type=a.media_type,
                content=a.content,
                size=len(a.content),
                truncated=a.truncated,
            )
            for r in records
            for a in r.artifacts
        )


@cache
def executor() -> ToolExecutor:
    """The worker's ToolExecutor: the same tools (built-ins and installed Python tools)
    and policy the plans were compiled against; shell steps in the ``FORGE_SANDBOX``
    mode with the ``FORGE_STEP_DISK_BYTES`` quota."""
    toolbox = build_toolbox(
        python_tools=True,
        sandbox=settings.FORGE_SANDBOX,
        limits=Limits(disk_bytes=settings.FORGE_STEP_DISK_BYTES),
    )
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


@cache
def agent_runner() -> AgentRunner | None:
    """The agent for steps with ``tools_allowed`` and no ``tool``: the model named by
    ``FORGE_MODEL`` (``openai:MODEL`` at ``FORGE_MODEL_BASE_URL`` with the key from
    ``FORGE_MODEL_API_KEY``, or ``scripted:FILE``); ``None`` when no model is set."""
    spec = settings.FORGE_MODEL
    if not spec:
        return None
    model = model_from_spec(spec, Endpoint.from_env(os.environ))
    return AgentRunner(model, executor())
