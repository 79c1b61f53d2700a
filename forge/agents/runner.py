"""``AgentRunner``: an agent step run as a loop of model turns and tool calls.

Each turn offers the model only the step's allowed tools. Every call it proposes is
bound with the compiler's rules (``bind_call``) and run by the ToolExecutor, so schema,
policy, approval and execution records apply exactly as for a planned call; a call that
cannot be bound (a tool outside ``tools_allowed``, unknown, denied, or with bad
arguments) is never executed: it is recorded as refused and the model is told why, so
it can correct itself. The step ends when the model answers without a tool call; that
answer, as a JSON object, is the output (a model that misses the ``done_when`` contract
is told so while turns remain). Tokens and cost of every turn add up into the step's
``ToolResult``, so the run's budget counts them, and passing the step's allowance stops
it with ``budget_exceeded``. Other ends: ``max_turns_exceeded``, ``timeout`` (the step's
``timeout_s`` over the whole loop) and the model's own error codes.

Approvals. A call whose tool needs approval (policy, high risk, or the plan's
``requires_approval_before``) runs only under the step's approval: the agent step waits
for a person before it starts (its approval binds the step's fingerprint: tools,
contract, dependencies), and that token is handed over in the grant. The runner checks
it and then derives, for each such call, a token for the exact arguments under the same
approver, so every execution record still names the arguments' hash. Without a step
approval the executor refuses the call and the whole step fails with
``approval_required``; the model cannot argue its way past that.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgspec

from forge.agents.brief import clip, step_messages, step_output, to_json
from forge.compiler import CallRefused, ExecutableNode, ToolBinding, bind_call
from forge.models import Message, ModelError, ModelPort, ModelReply, ToolCall
from forge.plan import canonical_json
from forge.runners.base import RunContext
from forge.runtime.agent_port import AgentGrant
from forge.runtime.approvals import ApprovalRefused, ApprovalToken
from forge.runtime.contracts import check_output
from forge.runtime.executor import ToolExecutor
from forge.runtime.records import ExecutionRecord
from forge.runtime.results import ToolResult
from forge.runtime.scheduler import approval_hash
from forge.telemetry.switch import current as current_tracing

__all__ = ["AgentRunner"]

# Executor refusals no later turn can fix: the step fails at once.
_FATAL = frozenset(
    {
        "approval_required",
        "approval_mismatch",
        "approval_invalid",
        "preview_changed",
        "stale_binding",
    }
)


@dataclass
class _Tally:
    """What the step has used so far, and a line per call for a failure's facts."""

    model: str
    tokens: int = 0
    cost: float = 0.0
    calls: list[dict[str, str]] = field(default_factory=list)
    artifacts: list[Mapping[str, Any]] = field(default_factory=list)  # of every call

    def failed(self, error: str, code: str) -> ToolResult:
        return ToolResult(
            "failed",
            output={"calls": self.calls},
            error=error,
            error_code=code,
            tokens=self.tokens,
            cost=self.cost,
            model=self.model,
            artifacts=tuple(self.artifacts),
        )


class AgentRunner:
    """Implements ``AgentPort`` with a ``ModelPort`` and the run's ``ToolExecutor``."""

    def __init__(
        self,
        model: ModelPort,
        executor: ToolExecutor,
        *,
        max_turns: int = 8,
        max_chars: int = 16_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_turns < 1:
            raise ValueError(f"max_turns must be at least 1, got {max_turns}")
        self.model = model
        self.executor = executor
        self.max_turns = max_turns
        self.max_chars = max_chars
        self.clock = clock

    def run_step(
        self,
        node: ExecutableNode,
        context: RunContext,
        inputs: Mapping[str, Any],
        grant: AgentGrant | None = None,
    ) -> ToolResult:
        grant = grant or AgentGrant()
        tally = _Tally(self.model.name)
        deadline = self.clock() + context.timeout_s
        messages = step_messages(node, grant.goal, inputs, self.max_chars)
        for turn in range(1, self.max_turns + 1):
            if self.clock() >= deadline:
                return tally.failed(_late(node, context), "timeout")
            try:
                reply = self._complete(messages, node)
            except ModelError as exc:
                return tally.failed(exc.message, exc.code)
            tally.tokens += reply.tokens
            tally.cost += reply.cost
            tally.model = reply.model or tally.model
            if over := _over(tally, grant):
                return tally.failed(f"step {node.id!r} {over}", "budget_exceeded")
            messages.append(reply.as_message())
            if not reply.tool_calls:
                output = step_output(reply.content)
                verdict = check_output(node.step.done_when, output)
                if verdict.valid or turn == self.max_turns:
                    # An invalid last answer is still the output: the Scheduler's
                    # contract check then marks the step invalid, with the verdict.
                    return ToolResult(
                        "succeeded", output, tokens=tally.tokens, cost=tally.cost,
                        model=tally.model, artifacts=tuple(tally.artifacts),
                    )  # fmt: skip
                messages.append(
                    Message.user(
                        f"That answer does not satisfy the step: {'; '.join(verdict.errors)}. "
                        "Answer again with one JSON object that does."
                    )
                )
                continue
            for call in reply.tool_calls:
                stopped = self._call(call, node, context, grant, deadline, tally, messages)
                if stopped is not None:
                    return stopped
            if over := _over(tally, grant):
                return tally.failed(f"step {node.id!r} {over}", "budget_exceeded")
        return tally.failed(
            f"step {node.id!r} did not finish within {self.max_turns} model turns",
            "max_turns_exceeded",
        )

    def _complete(self, messages: list[Message], node: ExecutableNode) -> ModelReply:
        """One model turn, in a ``chat <model>`` span when this process traces."""
        tracing = current_tracing()
        if tracing is None:
            return self.model.complete(messages, node.allowed_tools)
        with tracing.chat(self.model.name) as span:
            reply = self.model.complete(messages, node.allowed_tools)
            span.ended(
                response_model=reply.model,
                input_tokens=reply.input_tokens,
                output_tokens=reply.output_tokens,
            )
            return reply

    def _call(
        self,
        call: ToolCall,
        node: ExecutableNode,
        context: RunContext,
        grant: AgentGrant,
        deadline: float,
        tally: _Tally,
        messages: list[Message],
    ) -> ToolResult | None:
        """Run one proposed call and answer the model; a result when the step must stop."""
        left = deadline - self.clock()
        if left <= 0:
            return tally.failed(_late(node, context), "timeout")
        try:
            if call.error:
                raise CallRefused(call.error, code="invalid_args")
            binding = bind_call(
                self.executor.registry,
                self.executor.policy,
                call.name,
                call.arguments,
                node.step,
                grant.approval_scopes,
            )
        except CallRefused as refusal:
            self._record_refusal(call, context, refusal)
            tally.calls.append({"tool": call.name, "status": "refused", "code": refusal.code})
            answer = {"ok": False, "error": refusal.message, "code": refusal.code}
            messages.append(Message.tool(call.id, to_json(answer)))
            return None
        binding = msgspec.structs.replace(
            binding, timeout_s=min(binding.tool.default_timeout_s, left)
        )
        try:
            token = self._call_token(binding, node, context, grant)
        except ApprovalRefused as refusal:
            return tally.failed(refusal.message, refusal.code)
        result = self.executor.execute(
            binding, context, token=token, plan_approval_scopes=grant.approval_scopes
        )
        tally.tokens += result.tokens
        tally.cost += result.cost
        tally.artifacts += result.artifacts
        tally.calls.append({"tool": call.name, "status": result.status, "code": result.error_code})
        if result.error_code in _FATAL:
            return tally.failed(result.error, result.error_code)
        answer = (
            {"ok": True, "output": result.output}
            if result.succeeded
            else {"ok": False, "error": result.error, "code": result.error_code}
        )
        messages.append(Message.tool(call.id, clip(to_json(answer), self.max_chars)))
        return None

    def _call_token(
        self, binding: ToolBinding, node: ExecutableNode, context: RunContext, grant: AgentGrant
    ) -> ApprovalToken | None:
        """A token for exactly this call, derived from the step's verified approval; None
        when the call needs none, or when there is no approval to derive it from (the
        executor then refuses the call)."""
        signer = self.executor.approvals
        if not binding.approval_reasons or grant.token is None or signer is None:
            return None
        signer.verify(
            grant.token,
            context.run_id,
            context.step_id,
            approval_hash(node),
            grant.token.preview_hash,
        )
        # The person approved what the step may do; this call's own preview is taken now
        # and bound, so the executor still refuses it if it changes before the commit,
        # and the record keeps it.
        preview = self.executor.preview(binding, context)
        return signer.issue(
            context.run_id,
            context.step_id,
            binding.args_hash,
            grant.token.approver,
            preview.hash,
        )

    def _record_refusal(self, call: ToolCall, context: RunContext, refusal: CallRefused) -> None:
        """Refused before the executor, the call still leaves a record."""
        try:
            args_hash = hashlib.sha256(canonical_json(call.arguments).encode()).hexdigest()
        except (TypeError, ValueError):
            args_hash = ""
        self.executor.records.save(
            ExecutionRecord(
                id=uuid.uuid4().hex,
                run_id=context.run_id,
                step_id=context.step_id,
                attempt=context.attempt,
                tool=call.name,
                args_hash=args_hash,
                status="refused",
                error=refusal.message,
                error_code=refusal.code,
            )
        )


def _over(tally: _Tally, grant: AgentGrant) -> str:
    """Why the step has passed its allowance, or "" while it has not."""
    if grant.max_tokens is not None and tally.tokens > grant.max_tokens:
        return f"used {tally.tokens} tokens, over its allowance of {grant.max_tokens}"
    if grant.max_cost is not None and tally.cost > grant.max_cost:
        return f"cost {tally.cost:g}, over its allowance of {grant.max_cost:g}"
    return ""


def _late(node: ExecutableNode, context: RunContext) -> str:
    return f"agent step {node.id!r} did not finish within {context.timeout_s:g} s"
