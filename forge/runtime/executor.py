"""The ToolExecutor: the single entry for side effects.

It accepts only a concrete ``ToolBinding`` (from a compiled graph, its references to
earlier outputs resolved by ``forge.runtime.calls``), never a planner's function, and
does, in this order: argument schema validation, the policy check, the preview of a
call that writes or needs approval, the approval token (bound to the arguments and to
that preview: a call whose preview changed since it was approved is refused with
``preview_changed``; a call its preview says the runner will refuse is refused here,
approved or not), the timeout, the runner call, ``ToolResult`` normalisation, and an
``ExecutionRecord`` for the store (the preview is one of its artifacts). Refusals
happen before the runner is touched and are recorded too, so every attempt leaves a
trace. Registry, policy, record store and runners are injected; nothing here knows
about MCP, HTTP or Django.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

from forge.compiler import ToolBinding
from forge.errors import ForgeError
from forge.runners.base import RunContext, Runner, RunnerOutcome
from forge.runners.errors import RunnerError
from forge.runners.preview import CallPreview, arguments_preview
from forge.runtime.approvals import ApprovalSigner, ApprovalToken
from forge.runtime.calls import provenance
from forge.runtime.records import ExecutionRecord, ExecutionRecordStore
from forge.runtime.results import ToolResult, artifact_refs
from forge.telemetry.switch import current as current_tracing
from forge.tools import WRITE_CLASSES, PolicyEngine, ToolRegistry

__all__ = ["ToolExecutor"]

# Past its own timeout a runner gets this long to return before the executor gives up.
_GRACE_S = 5.0


class ToolExecutor:
    def __init__(
        self,
        registry: ToolRegistry,
        policy: PolicyEngine,
        records: ExecutionRecordStore,
        runners: Mapping[str, Runner],
        approvals: ApprovalSigner | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.registry = registry
        self.policy = policy
        self.records = records
        self.runners = runners
        self.approvals = approvals
        self.clock = clock
        self.calls = 0

    def execute(
        self,
        binding: ToolBinding,
        context: RunContext,
        *,
        token: ApprovalToken | None = None,
        plan_approval_scopes: Iterable[str] = (),
    ) -> ToolResult:
        """Run one bound call and return its normalised result; never raises for a
        refusal or a failure, only for a binding that is not a ``ToolBinding``."""
        if not isinstance(binding, ToolBinding):
            raise TypeError("the ToolExecutor runs only ToolBindings from a compiled graph")
        tracing = current_tracing()
        if tracing is None:
            return self._execute(binding, context, token, plan_approval_scopes)
        # The one tool-call span of every path (planned steps and agents' calls alike).
        with tracing.tool_call(
            binding.tool.name, context.run_id, context.step_id, binding.args
        ) as span:
            result = self._execute(binding, context, token, plan_approval_scopes)
            span.ended(
                result.status,
                output=result.output,
                error_code=result.error_code,
                call_id=result.record_id,
            )
            return result

    def _execute(
        self,
        binding: ToolBinding,
        context: RunContext,
        token: ApprovalToken | None,
        plan_approval_scopes: Iterable[str],
    ) -> ToolResult:
        self.calls += 1
        started = self.clock()
        preview: CallPreview | None = None
        try:
            approved, preview = self._admit(binding, context, token, plan_approval_scopes)
        except ForgeError as refusal:
            return self._refused(binding, context, refusal, started, preview)
        context = RunContext(
            run_id=context.run_id,
            step_id=context.step_id,
            workspace=context.workspace,
            timeout_s=binding.timeout_s,
            attempt=context.attempt,
            approved=approved,
            approval_required=bool(binding.approval_reasons),
        )
        outcome = self._call(binding, context)
        latency_ms = (self.clock() - started) * 1000
        artifacts = outcome.artifacts if preview is None else (preview.artifact, *outcome.artifacts)
        record = _record(
            binding,
            context,
            status="succeeded" if outcome.ok else "failed",
            error=outcome.error or "",
            error_code=outcome.error_code or "",
            exit_code=outcome.exit_code,
            isolation=outcome.isolation,
            artifacts=artifacts,
            notes=outcome.notes,
            latency_ms=latency_ms,
            tokens=outcome.tokens,
            cost=outcome.cost,
        )
        self.records.save(record)
        return ToolResult(
            status="succeeded" if outcome.ok else "failed",
            output=outcome.output,
            error=outcome.error or "",
            error_code=outcome.error_code or "",
            tokens=outcome.tokens,
            cost=outcome.cost,
            latency_ms=latency_ms,
            record_id=record.id,
            artifacts=artifact_refs(record.id, artifacts),
        )

    def preview(self, binding: ToolBinding, context: RunContext) -> CallPreview:
        """What the call would do, as its runner previews it (its tool and arguments when
        the runner has no preview). Never raises: a call that cannot be previewed (a path
        outside the workspace, say) gets an ``error`` preview saying why."""
        runner = self.runners.get(binding.tool.name)
        make = getattr(runner, "preview", None)
        if make is None:
            preview = arguments_preview(binding.tool.name, binding.args)
        else:
            try:
                preview = make(binding.tool, binding.args, context)
            except Exception as exc:  # RunnerError, or a runner bug: either way, say so
                message = (
                    str(exc) if isinstance(exc, RunnerError) else f"{type(exc).__name__}: {exc}"
                )
                preview = CallPreview("error", f"cannot preview: {message}", message)
        # Where a resolved call's values came from comes first: a diff keeps its own
        # header lines, and the approval binds this text as a whole.
        origin = provenance(binding) if binding.concrete else ""
        return replace(preview, text=origin + preview.text) if origin else preview

    def _admit(
        self,
        binding: ToolBinding,
        context: RunContext,
        token: ApprovalToken | None,
        plan_approval_scopes: Iterable[str],
    ) -> tuple[bool, CallPreview | None]:
        """Schema, policy, preview and approval, in that order: whether an approval was
        checked, and the call's preview (``None`` for a call that neither writes nor
        needs approval)."""
        if not binding.concrete:
            raise ForgeError(
                f"step {context.step_id!r}'s arguments still name earlier outputs; only its "
                "resolved call can run (forge.runtime.calls)",
                code="unresolved_reference",
            )
        name = binding.tool.name
        down = self.registry.unavailable_reason(name)
        if down is not None:
            raise ForgeError(f"tool {name!r} is not available: {down}", code="tool_unavailable")
        tool = self.registry.get(name)
        if tool != binding.tool:
            raise ForgeError(
                f"tool {tool.name!r} changed since the plan was compiled", code="stale_binding"
            )
        self.registry.validate_args(tool.name, binding.args)
        decision = self.policy.decide(tool, plan_approval_scopes, binding.side_effect)
        if not decision.allowed:
            raise ForgeError(decision.reason, code="unauthorized_tool")
        needs_approval = bool(binding.approval_reasons or decision.requires_approval)
        preview = None
        if needs_approval or binding.side_effect in WRITE_CLASSES:
            preview = self.preview(binding, context)
            if preview.refusal is not None:  # no approval can make it run
                raise ForgeError(preview.refusal.reason, code=preview.refusal.code)
        if not needs_approval:
            return False, preview
        if self.approvals is None:
            raise ForgeError(
                f"step {context.step_id!r} needs approval and no approval signer is configured",
                code="approval_required",
            )
        assert preview is not None
        self.approvals.verify(
            token, context.run_id, context.step_id, binding.args_hash, preview.hash
        )
        return True, preview

    def _call(self, binding: ToolBinding, context: RunContext) -> RunnerOutcome:
        runner = self.runners.get(binding.tool.name)
        if runner is None:
            return RunnerOutcome.failure(f"no runner for tool {binding.tool.name!r}", "no_runner")
        if getattr(runner, "enforces_timeout", True):
            return self._guarded(runner, binding, context)
        return self._with_backstop(runner, binding, context)

    @staticmethod
    def _guarded(runner: Runner, binding: ToolBinding, context: RunContext) -> RunnerOutcome:
        try:
            return runner.run(binding.tool, binding.args, context)
        except Exception as exc:  # a runner bug must fail the step, not the worker
            return RunnerOutcome.failure(f"{type(exc).__name__}: {exc}", "runner_crashed")

    def _with_backstop(
        self, runner: Runner, binding: ToolBinding, context: RunContext
    ) -> RunnerOutcome:
        """Run in a daemon thread and stop waiting after the timeout: for runners (plugin
        tools) that declare ``enforces_timeout = False``."""
        box: list[RunnerOutcome] = []
        thread = threading.Thread(
            target=lambda: box.append(self._guarded(runner, binding, context)), daemon=True
        )
        thread.start()
        thread.join(context.timeout_s + _GRACE_S)
        if box:
            return box[0]
        return RunnerOutcome.failure(
            f"tool {binding.tool.name!r} did not finish within {context.timeout_s:g} s", "timeout"
        )

    def _refused(
        self,
        binding: ToolBinding,
        context: RunContext,
        refusal: ForgeError,
        started: float,
        preview: CallPreview | None,
    ) -> ToolResult:
        latency_ms = (self.clock() - started) * 1000
        artifacts = () if preview is None else (preview.artifact,)
        record = _record(
            binding,
            context,
            status="refused",
            error=refusal.message,
            error_code=refusal.code,
            latency_ms=latency_ms,
            artifacts=artifacts,
        )
        self.records.save(record)
        return ToolResult(
            "failed",
            error=refusal.message,
            error_code=refusal.code,
            latency_ms=latency_ms,
            record_id=record.id,
            artifacts=artifact_refs(record.id, artifacts),
        )


def _record(binding: ToolBinding, context: RunContext, **fields: Any) -> ExecutionRecord:
    """A new record of one attempt of ``context``'s step calling ``binding``."""
    return ExecutionRecord(
        id=uuid.uuid4().hex,
        run_id=context.run_id,
        step_id=context.step_id,
        attempt=context.attempt,
        tool=binding.tool.name,
        args_hash=binding.args_hash,
        **fields,
    )
