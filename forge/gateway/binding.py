"""The pure checks of a bound call (SPEC section 11): a call whose ``_meta`` names a run
(``forge/run``) and a step (``forge/step``) of a run started with ``executor: "agent"``.

The call may be forwarded only when the run is the agent's to execute, the step is in the
plan and calls exactly this tool, it is ready (its dependencies succeeded) and not done,
and the arguments equal the step's approved arguments with their ``$from`` references
resolved by Forge, compared as canonical JSON. The approval gate then clears the version
when the step is admitted (``forge.runtime.gate`` through ``Scheduler.admit``), as for a
worker. Each refusal is a ``GatewayRefused`` with a stable code, and nothing is forwarded.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from forge.compiler import ExecutableNode, ToolBinding
from forge.errors import ForgeError
from forge.plan import canonical_json

__all__ = [
    "DONE_STATUSES",
    "RUN_META",
    "STEP_META",
    "BoundCall",
    "GatewayRefused",
    "agents_step",
    "arguments_hash",
    "check_bound_call",
    "same_arguments",
]

RUN_META = "forge/run"
STEP_META = "forge/step"
# A step in one of these has had its call (or will never have one in this run).
DONE_STATUSES = frozenset({"succeeded", "failed", "invalid", "skipped", "cancelled"})


class GatewayRefused(ForgeError, PermissionError):
    """A call the gateway refuses, forwarding nothing. ``code``: ``unknown_tool``,
    ``unauthorized_tool``, ``not_in_plan``, ``args_mismatch``, ``step_not_ready``,
    ``step_done``, ``run_not_agent``, ``not_approved`` (or the gate's own code), and
    ``invalid_meta`` for a ``_meta`` that names a run without a step or the reverse."""

    code = "not_in_plan"


@dataclass(frozen=True)
class BoundCall:
    """The run and step a call's ``_meta`` names."""

    run_id: int
    step_id: str

    @classmethod
    def from_meta(cls, meta: Mapping[str, Any] | None) -> BoundCall | None:
        """The run and step of ``meta``; ``None`` for an unbound call (neither named).
        Raises ``GatewayRefused`` (``invalid_meta``) for one without the other or for a
        run that is not a positive integer."""
        meta = meta or {}
        run, step = meta.get(RUN_META), meta.get(STEP_META)
        if run is None and step is None:
            return None
        if run is None or step is None:
            raise GatewayRefused(
                f"a bound call names both {RUN_META!r} and {STEP_META!r} in its _meta",
                code="invalid_meta",
            )
        if isinstance(run, bool) or not isinstance(run, int | str) or not str(run).isdigit():
            raise GatewayRefused(
                f"{RUN_META!r} must be a run's id, got {run!r}", code="invalid_meta"
            )
        if not isinstance(step, str) or not step:
            raise GatewayRefused(
                f"{STEP_META!r} must be a step's id, got {step!r}", code="invalid_meta"
            )
        run_id = int(run)
        if run_id < 1:
            raise GatewayRefused(
                f"{RUN_META!r} must be a run's id, got {run!r}", code="invalid_meta"
            )
        return cls(run_id, step)


def same_arguments(given: Mapping[str, Any], approved: Mapping[str, Any]) -> bool:
    """Whether ``given`` are the ``approved`` arguments, as canonical JSON (key order and
    spacing never matter; ``1`` and ``1.0`` do, as they do to a tool)."""
    return canonical_json(dict(given)) == canonical_json(dict(approved))


def check_bound_call(
    call: BoundCall,
    *,
    agent_run: bool,
    node: ExecutableNode | None,
    status: str | None,
    tool: str,
    arguments: Mapping[str, Any],
    resolved: ToolBinding | None,
) -> None:
    """Raise ``GatewayRefused`` unless ``tool(arguments)`` is the call step
    ``call.step_id`` (``node``, now in ``status``, with ``resolved`` its call with
    earlier outputs filled in, or ``None`` when that cannot be made yet) approved."""
    where = f"step {call.step_id!r} of run {call.run_id}"
    if not agent_run:
        raise GatewayRefused(
            f"run {call.run_id} is executed by Forge's workers, not by an agent "
            '(start it with executor: "agent")',
            code="run_not_agent",
        )
    if node is None:
        raise GatewayRefused(f"run {call.run_id}'s plan has no step {call.step_id!r}")
    if node.binding is None:
        raise GatewayRefused(f"{where} is an agent step, not a call of {tool!r}")
    if node.binding.tool.name != tool:
        raise GatewayRefused(f"{where} calls {node.binding.tool.name!r}, not {tool!r}")
    if not agents_step(node):
        raise GatewayRefused(f"{where} calls a built-in tool, which Forge's workers run")
    if status in DONE_STATUSES:
        raise GatewayRefused(
            f"{where} is {status} already: its call is not made again", code="step_done"
        )
    if status != "ready" or resolved is None:
        raise GatewayRefused(
            f"{where} is {status}, not ready: "
            + (
                "its dependencies have not all succeeded"
                if status in ("pending", "reset")
                else "it waits for a person's approval"
                if status == "awaiting_approval"
                else "it cannot be called now"
            ),
            code="step_not_ready",
        )
    if not same_arguments(arguments, resolved.args):
        raise GatewayRefused(
            f"the arguments are not those approved for {where}", code="args_mismatch"
        )


def agents_step(node: ExecutableNode) -> bool:
    """Whether, in a run started with ``executor: "agent"``, the agent executes ``node``
    through the gateway: a step that calls an MCP server's tool. Every other step (a
    built-in such as ``sleep``, an agent step) is run by Forge's workers as usual."""
    return node.binding is not None and node.binding.tool.source.startswith("mcp:")


def arguments_hash(arguments: Mapping[str, Any]) -> str:
    """SHA-256 of the arguments' canonical JSON, as a binding's ``args_hash`` is made."""
    return hashlib.sha256(canonical_json(dict(arguments)).encode()).hexdigest()
