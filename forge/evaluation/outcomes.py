"""The runners of an evaluation: every tool answers what the case scripts, nothing real
happens, and every call that reaches a runner is written down.

``ScriptedRunner`` is a ``forge.runners.Runner``, so the ToolExecutor in front of it does
everything it does for real calls (schema, policy, preview, approval token, record);
only the runner's own work is replaced. A call no script matches runs the in-process
built-in (``noop``, ``echo``, ``sleep``, ``fail``: no side effect) or, for any other
tool, fails with ``unscripted_call``, so a plan that wanders off the script is seen.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from forge.evaluation.suite import ScriptedResult, ToolScript
from forge.plan import canonical_json
from forge.runners.base import RunContext, RunnerOutcome
from forge.runners.basic import BASIC_TOOLS, BasicRunner
from forge.tools import ToolSpec

__all__ = ["CallLog", "RunnerCall", "ScriptedRunner", "args_hash"]


def args_hash(args: Mapping[str, Any]) -> str:
    """The hash the compiler gives these arguments (``ToolBinding.args_hash``)."""
    return hashlib.sha256(canonical_json(dict(args)).encode()).hexdigest()


@dataclass(frozen=True)
class RunnerCall:
    """One call that reached a runner: which step (and attempt) made it, with what, and
    what it got. ``after_event`` is how many run events had been written before it."""

    step_id: str
    attempt: int
    tool: str
    args: Mapping[str, Any]
    args_hash: str
    ok: bool
    error_code: str
    after_event: int

    def to_data(self) -> dict[str, Any]:
        return {
            "step_id": self.step_id,
            "attempt": self.attempt,
            "tool": self.tool,
            "args": dict(self.args),
            "args_hash": self.args_hash,
            "ok": self.ok,
            "error_code": self.error_code,
        }


class CallLog:
    """The calls of one case, in order, and the count of run events seen so far."""

    def __init__(self) -> None:
        self.calls: list[RunnerCall] = []
        self.events_seen = 0


class ScriptedRunner:
    """Answers each call with the next result of the first script that matches it."""

    def __init__(self, scripts: tuple[ToolScript, ...], log: CallLog) -> None:
        self.scripts = scripts
        self.log = log
        self._used = [0] * len(scripts)
        self._basic = BasicRunner()

    def run(self, tool: ToolSpec, args: Mapping[str, Any], context: RunContext) -> RunnerOutcome:
        outcome = self._answer(tool, args, context)
        self.log.calls.append(
            RunnerCall(
                step_id=context.step_id,
                attempt=context.attempt,
                tool=tool.name,
                args=dict(args),
                args_hash=args_hash(args),
                ok=outcome.ok,
                error_code=outcome.error_code or "",
                after_event=self.log.events_seen,
            )
        )
        return outcome

    def _answer(
        self, tool: ToolSpec, args: Mapping[str, Any], context: RunContext
    ) -> RunnerOutcome:
        for index, script in enumerate(self.scripts):
            if script.step is not None and script.step != context.step_id:
                continue
            if script.pattern.matches(tool.name, args):
                result = script.results[min(self._used[index], len(script.results) - 1)]
                self._used[index] += 1
                return _outcome(result)
        if tool.name in BASIC_TOOLS:
            return self._basic.run(tool, args, context)
        return RunnerOutcome.failure(
            f"the case scripts no outcome for this call of {tool.name!r}", "unscripted_call"
        )


def _outcome(result: ScriptedResult) -> RunnerOutcome:
    if result.kind == "ok":
        outcome = RunnerOutcome.success(result.output)
    else:
        outcome = RunnerOutcome.failure(result.error, result.code)
    if result.tokens or result.cost:
        outcome = RunnerOutcome(
            outcome.ok,
            outcome.output,
            error=outcome.error,
            error_code=outcome.error_code,
            tokens=result.tokens,
            cost=result.cost,
        )
    return outcome
