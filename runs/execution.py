"""What a worker process needs to run steps: one ToolExecutor over the deployment's
tools (``plans.compilation.tools``, the snapshot plans compile against; verifying
approvals with ``plans.gate``'s key), a record store that writes ExecutionRecords and
their artifacts to the database, and each run's workspace directory."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

from django.conf import settings

from forge.agents import AgentRunner
from forge.models import ModelPort
from forge.models.config import Endpoint, model_from_spec
from forge.runtime import ExecutionRecord, ToolExecutor
from forge.toolbox import ToolboxSnapshot
from forge.tools import Policy, PolicyEngine
from plans.compilation import policy, tools
from plans.gate import approval_signer
from runs import models
from runs.sql import Insert, Statement


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


_RECORD_FIELDS = (
    "id",
    "run_id",
    "step_id",
    "attempt",
    "tool",
    "args_hash",
    "status",
    "error",
    "error_code",
    "exit_code",
    "isolation",
    "notes",
    "started_at",
    "latency_ms",
    "tokens",
    "cost",
)
_insert_records = Insert(models.ExecutionRecord, _RECORD_FIELDS)
_insert_artifacts = Insert(
    models.Artifact, ("record_id", "name", "media_type", "content", "size", "truncated")
)


def record_writes(records: list[ExecutionRecord]) -> list[Statement]:
    """The statements that write execution records and their artifacts."""
    return _insert_records.statements(
        [
            (
                r.id,
                int(r.run_id),
                r.step_id,
                r.attempt,
                r.tool,
                r.args_hash,
                r.status,
                r.error,
                r.error_code,
                r.exit_code,
                r.isolation,
                list(r.notes),
                r.started_at,
                r.latency_ms,
                r.tokens,
                r.cost,
            )
            for r in records
        ]
    ) + _insert_artifacts.statements(
        [
            (r.id, a.name, a.media_type, a.content, len(a.content), a.truncated)
            for r in records
            for a in r.artifacts
        ]
    )


class _Executors:
    """``executor()``: the worker's ToolExecutor over the current tools snapshot (never
    discovering: the worker does that before it takes a run's lock) and the policy the
    plans were compiled against; shell steps in the ``FORGE_SANDBOX`` mode with the
    ``FORGE_STEP_DISK_BYTES`` quota. One per snapshot and policy, kept until either
    changes; ``cache_clear()`` forgets it."""

    def __init__(self) -> None:
        self._built: tuple[ToolboxSnapshot, Policy, ToolExecutor] | None = None

    def __call__(self) -> ToolExecutor:
        snapshot, rules = tools(refresh=False), policy()
        built = self._built
        if built is not None and built[0] is snapshot and built[1] is rules:
            return built[2]
        made = ToolExecutor(
            snapshot.registry,
            PolicyEngine(rules),
            DatabaseRecordStore(),
            snapshot.runners,
            approvals=approval_signer(),
        )
        self._built = (snapshot, rules, made)
        return made

    def cache_clear(self) -> None:
        self._built = None


executor = _Executors()


def workspace_for(run_id: int) -> Path:
    path = Path(settings.FORGE_WORKSPACES) / f"run-{run_id}"
    path.mkdir(parents=True, exist_ok=True)
    return path


def copy_workspace(from_run: int, to_run: int) -> None:
    """Start run ``to_run``'s workspace as run ``from_run`` left its own: a re-run keeps
    the steps that wrote files there, so the steps it runs again find them, as a resumed
    run finds its own. Links are copied as links (the tools refuse a path that resolves
    outside the workspace, wherever a link points)."""
    source = Path(settings.FORGE_WORKSPACES) / f"run-{from_run}"
    if source.is_dir():
        shutil.copytree(source, workspace_for(to_run), symlinks=True, dirs_exist_ok=True)


class _Agents:
    """``agent_runner()``: the agent for steps with ``tools_allowed`` and no ``tool``: the
    model named by ``FORGE_MODEL`` (``openai:MODEL`` at ``FORGE_MODEL_BASE_URL`` with the
    key from ``FORGE_MODEL_API_KEY``, or ``scripted:FILE``), made once, calling tools
    through the current ``executor()``; ``None`` when no model is set. ``cache_clear()``
    forgets the model."""

    def __init__(self) -> None:
        self._model: tuple[str, ModelPort] | None = None
        self._runner: AgentRunner | None = None

    def __call__(self) -> AgentRunner | None:
        spec = settings.FORGE_MODEL
        if not spec:
            return None
        if self._model is None or self._model[0] != spec:
            self._model = (spec, model_from_spec(spec, Endpoint.from_env(os.environ)))
            self._runner = None
        tools_executor = executor()
        if self._runner is None or self._runner.executor is not tools_executor:
            self._runner = AgentRunner(self._model[1], tools_executor)
        return self._runner

    def cache_clear(self) -> None:
        self._model = self._runner = None


agent_runner = _Agents()
