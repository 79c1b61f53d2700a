"""A step's concrete call: its binding with every value taken from an earlier step's
output resolved (``forge.plan.references``).

This is the one place references are resolved, for every host. The Scheduler resolves a
step's call when the step becomes ready (``Scheduler.call``): the approval of a step that
waits binds the resolved call's hash and preview, and LocalRun and the web's workers
hand that same call to the dispatcher. The outputs it reads are those of succeeded
ancestors, which stay as they are until a replan resets them (and with them this step),
so resolving twice gives the same call, in any process. A resolved call is validated
against the tool's schema here, before any person is asked to approve it, and again by
the ToolExecutor, which refuses a binding that is not concrete.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import msgspec

from forge.compiler import ExecutableNode, ToolBinding
from forge.errors import ForgeError
from forge.plan import canonical_json
from forge.plan.references import (
    JOIN,
    Location,
    Reference,
    ReferenceValueError,
    location_text,
    lookup,
    substitute,
)
from forge.runtime.state import RunState
from forge.tools import ArgumentsInvalid, SideEffect
from forge.tools.registry import validate_with_schema

__all__ = ["UnresolvedCall", "call_of", "concrete_call", "provenance", "resolve_args"]

# A resolved call may keep its compiled side effect or fall to a lower one, never rise:
# what it waits for (approval, the policy's decision) was decided on the compiled one.
_RANK: dict[str, int] = {"none": 0, "read": 1, "write": 2}


class UnresolvedCall(ForgeError, ValueError):
    """A step's call cannot be made from the outputs at hand. ``code``:
    ``unresolved_reference`` (an output lacks the path, or a step has no output),
    ``invalid_args`` (a resolved value the tool's schema refuses, or an object in a
    ``$join``) or ``side_effect_changed`` (the resolved call would have a side effect the
    compiled one did not)."""

    code = "unresolved_reference"


def concrete_call(binding: ToolBinding, outputs: Mapping[str, Any]) -> ToolBinding:
    """``binding`` with its references resolved from ``outputs`` (step id -> output),
    hashed and validated; a concrete binding is returned as it is. Raises
    ``UnresolvedCall``."""
    if binding.concrete:
        return binding
    args = resolve_args(binding.args, outputs)
    try:
        validate_with_schema(binding.tool, args)
    except ArgumentsInvalid as exc:
        sources = ", ".join(dict.fromkeys(r.source_text for r in binding.references))
        raise UnresolvedCall(
            f"{exc.message} (with the values from {sources or 'the plan'})", code="invalid_args"
        ) from None
    effect = binding.tool.effective_side_effect(args)
    if not _within(effect, binding.side_effect):
        raise UnresolvedCall(
            f"with the values from earlier steps the call's side effect is {effect}, but it "
            f"was compiled and approved as {binding.side_effect}",
            code="side_effect_changed",
        )
    args_hash = hashlib.sha256(canonical_json(args).encode()).hexdigest()
    return msgspec.structs.replace(binding, args=args, args_hash=args_hash, concrete=True)


def resolve_args(args: Mapping[str, Any], outputs: Mapping[str, Any]) -> dict[str, Any]:
    """``args`` as written (with operators) with their values taken from ``outputs``
    (step id -> output), not yet validated: what a page shows beside a step's written
    arguments. Raises ``UnresolvedCall``."""

    def value_of(reference: Reference) -> Any:
        if reference.step not in outputs:
            raise UnresolvedCall(
                f"argument {_where(reference)} refers to step {reference.step!r}, which has "
                "not succeeded"
            )
        try:
            return lookup(outputs[reference.step], reference.path)
        except ReferenceValueError as exc:
            raise UnresolvedCall(
                f"argument {_where(reference)} refers to {reference.source_text}, but in "
                f"step {reference.step!r}'s output {exc.message}",
                code=exc.code,
            ) from None

    try:
        return substitute(args, value_of)
    except ReferenceValueError as exc:
        raise UnresolvedCall(exc.message, code=exc.code) from None


def call_of(node: ExecutableNode, state: RunState) -> ToolBinding | None:
    """The concrete call of ``node`` from the outputs of its succeeded steps in
    ``state`` (``None`` for an agent step). Raises ``UnresolvedCall``."""
    binding = node.binding
    if binding is None or binding.concrete:
        return binding
    steps = state.steps
    outputs = {}
    for reference in binding.references:
        step = steps.get(reference.step)
        if step is not None and step.status == "succeeded":
            outputs[reference.step] = step.output
    return concrete_call(binding, outputs)


def provenance(binding: ToolBinding) -> str:
    """Lines saying which argument of a resolved call came from which earlier output,
    and its size (the values themselves are shown by the call's preview, as a value
    written in the plan would be); empty for a call without references."""
    if not binding.references:
        return ""
    by_place: dict[Location, list[Reference]] = {}
    for reference in binding.references:
        by_place.setdefault(reference.at, []).append(reference)
    lines = ["values from earlier steps:"]
    for at, references in by_place.items():
        sources = ", ".join(reference.source_text for reference in references)
        if references[0].part is not None:
            sources = f"{JOIN} of {sources}"
        lines.append(f"  {location_text(at)} <- {sources} ({_size(_at(binding.args, at))})")
    return "\n".join(lines) + "\n"


def _within(effect: SideEffect, compiled: SideEffect) -> bool:
    if effect == compiled:
        return True
    return _RANK.get(effect, 3) < _RANK.get(compiled, 3)


def _where(reference: Reference) -> str:
    place = location_text(reference.at)
    return place if reference.part is None else f"{place} (part {reference.part} of its {JOIN})"


def _at(args: Mapping[str, Any], at: Location) -> Any:
    value: Any = args
    for item in at:
        value = value[item]
    return value


def _size(value: Any) -> str:
    if isinstance(value, str):
        return f"text of {len(value)} characters"
    if isinstance(value, list):
        return f"a list of {len(value)} items"
    if isinstance(value, Mapping):
        return f"an object of {len(value)} keys"
    if isinstance(value, bool):
        return "a boolean"
    return "null" if value is None else "a number"
