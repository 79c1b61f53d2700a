"""What a step waiting for approval will do, shown to the approver (SPEC section 5).

The Scheduler asks its ``Previewer`` for a step's preview when the step starts waiting
for approval, and writes it into that event; an approval binds the preview's hash. A
tool step is previewed by the ToolExecutor as it would run (``ToolExecutor.preview``),
so the executor can compare the two at commit; a step whose arguments take values from
earlier steps is previewed as its resolved call, which is what runs. An agent step's
calls are not known before it runs: its preview is what it may do (the tools it may
call, with their scopes and side effects, and its contract); each call it then makes is
previewed and recorded on its own.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from forge.compiler import ExecutableNode, ToolBinding
from forge.runners.base import RunContext
from forge.runners.preview import CallPreview
from forge.runtime.executor import ToolExecutor

__all__ = ["Previewer", "agent_preview", "step_previewer"]

# A step and its call (``Scheduler.call``: the binding with the values it takes from
# earlier steps resolved; ``None`` for an agent step).
Previewer = Callable[[ExecutableNode, ToolBinding | None], CallPreview]


def agent_preview(node: ExecutableNode) -> CallPreview:
    lines = [f"agent step {node.id}: {node.step.description}", "may call:"]
    for tool in node.allowed_tools:
        lines.append(
            f"- {tool.name} (scope {tool.permission_scope}, side effect {tool.side_effect}, "
            f"risk {tool.risk})"
        )
    done = node.step.done_when
    if done is not None:
        lines.append(f"done when: {done.description}")
        lines += [f"- requires key {key!r}" for key in done.required_keys]
        lines += [f"- check {check}" for check in done.checks]
    names = ", ".join(tool.name for tool in node.allowed_tools)
    return CallPreview("agent", f"agent step that may call {names}", "\n".join(lines))


def step_previewer(
    executor: ToolExecutor, run_id: str, workspace_for: Callable[[], Path]
) -> Previewer:
    """Previews the steps of run ``run_id`` as ``executor`` will run them, in the
    workspace ``workspace_for()`` returns (called only when a tool step is previewed)."""

    def preview(node: ExecutableNode, call: ToolBinding | None = None) -> CallPreview:
        if node.binding is None:
            return agent_preview(node)
        binding = call if call is not None else node.binding
        context = RunContext(
            run_id=run_id,
            step_id=node.id,
            workspace=workspace_for(),
            timeout_s=binding.timeout_s,
        )
        return executor.preview(binding, context)

    return preview
