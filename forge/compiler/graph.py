"""The compiled plan: the only structure the Scheduler and the ToolExecutor accept.

A node's id is its step's id. Steps already carry unique, validated ids, and reusing them
keeps a node's identity stable from one plan version to the next, so diffs, preserved
results and run events line up without a mapping table. Each node also carries a
``fingerprint`` of what it would execute (tool, argument hash, dependencies, ``done_when``
and allowed tools, but not its description), so a replan can tell whether a step it
preserves is really unchanged. The fingerprint and the graph's ``content_hash`` are
derived values computed when read, not constructor arguments: together they would double
the time of a compile (measured at 10,000 steps), and scheduling reads neither.
``args_hash`` is computed at compile time, since approvals bind to it. A binding whose
arguments name earlier steps' outputs (``forge.plan.references``) is not ``concrete``: its
``args`` and ``args_hash`` are the arguments as written, which the fingerprint uses (a
replan that keeps the step keeps it preserved), and the call that runs is resolved from
the outputs when the step becomes ready (``forge.runtime.calls``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import msgspec

from forge.plan import PlanDocument, Step, canonical_json, content_hash
from forge.plan.jsontext import encode_plain, json_number
from forge.plan.references import Reference, location_text
from forge.tools import HARMLESS, SideEffect, ToolSpec

__all__ = [
    "ExecutableGraph",
    "ExecutableNode",
    "PerformedSideEffect",
    "ToolBinding",
]


# Bindings and nodes are frozen msgspec structs, made positionally in C: the compiler
# makes one of each per step, and a frozen dataclass's ``__init__`` (each field set
# through ``object.__setattr__``) was a tenth of compiling a 10,000-step plan. Not tracked
# by the cyclic collector: they refer to the plan's values and tool specs, never back.
# ``msgspec.structs.replace`` stands for ``dataclasses.replace``.
class ToolBinding(msgspec.Struct, frozen=True, gc=False):
    """A resolved, validated and authorised call: what the ToolExecutor runs.

    ``args_hash`` is the SHA-256 of the arguments' canonical JSON, the hash approvals and
    execution records bind to. ``timeout_s`` is the step's own or the tool's default, and
    ``side_effect`` is the tool's effect for these arguments (an HTTP GET only reads).
    ``references`` are the earlier outputs the arguments take values from; until they
    are resolved the binding is not ``concrete`` and the ToolExecutor refuses it.
    """

    tool: ToolSpec
    args: Mapping[str, Any]
    args_hash: str
    timeout_s: float
    side_effect: SideEffect
    approval_reasons: tuple[str, ...] = ()
    references: tuple[Reference, ...] = ()
    concrete: bool = True

    @property
    def repeatable(self) -> bool:
        """Whether running this call again is harmless: no write or external effect, or
        an idempotent tool."""
        return self.side_effect in HARMLESS or self.tool.idempotent


class ExecutableNode(msgspec.Struct, frozen=True, gc=False):
    """One step, compiled. ``binding`` is ``None`` for an agent step, which instead may
    call any of ``allowed_tools``; each such call is bound and checked when it is made."""

    id: str
    step: Step
    depends_on: tuple[str, ...]
    binding: ToolBinding | None
    allowed_tools: tuple[ToolSpec, ...]
    approval_reasons: tuple[str, ...]

    @property
    def fingerprint(self) -> str:
        """SHA-256 over what the step would execute, computed when read (the Scheduler
        never needs it, a replan does). Dependencies and allowed tools count as sets, so
        reordering them is no change; the description is left out, so rewording it is
        none either."""
        done = self.step.done_when
        binding = self.binding
        deps = self.depends_on
        content = (  # tuples are written as lists; one of fewer than two items is sorted
            binding.tool.name if binding else None,
            binding.args_hash if binding else None,
            deps if len(deps) < 2 else sorted(deps),
            sorted({tool.name for tool in self.allowed_tools}) if self.allowed_tools else (),
            None if done is None else (done.description, done.required_keys, done.checks),
        )
        try:  # texts and lists only: msgspec writes them as canonical_json does, faster
            text = encode_plain(content)
        except (msgspec.MsgspecError, TypeError, ValueError):  # e.g. a lone surrogate
            text = canonical_json(content).encode()
        return hashlib.sha256(text).hexdigest()

    def to_data(self) -> dict[str, Any]:
        binding = self.binding
        return {
            "id": self.id,
            "tool": binding.tool.name if binding else None,
            "allowed_tools": [tool.name for tool in self.allowed_tools],
            "args_hash": binding.args_hash if binding else None,
            "side_effect": binding.side_effect if binding else None,
            "timeout_s": binding.timeout_s if binding else self.step.timeout_s,
            "approval_reasons": list(self.approval_reasons),
            "depends_on": list(self.depends_on),
            "fingerprint": self.fingerprint,
        }

    def plain_data(self) -> _NodeData:
        """``to_data()`` for ``forge.plan.jsontext.indented_plain``: the same JSON."""
        binding = self.binding
        allowed = [tool.name for tool in self.allowed_tools] if self.allowed_tools else ()
        if binding is None:
            return _NodeData(self.id, None, allowed, None, None, json_number(self.step.timeout_s),
                             self.approval_reasons, self.depends_on, self.fingerprint)  # fmt: skip
        return _NodeData(self.id, binding.tool.name, allowed, binding.args_hash,
                         binding.side_effect, json_number(binding.timeout_s),
                         self.approval_reasons, self.depends_on, self.fingerprint)  # fmt: skip


class _NodeData(msgspec.Struct, gc=False):
    """``ExecutableNode.to_data``'s keys in its order, made positionally in C (and not
    tracked by the cyclic collector: it holds no cycles)."""

    id: str
    tool: str | None
    allowed_tools: Any
    args_hash: str | None
    side_effect: str | None
    timeout_s: Any
    approval_reasons: tuple[str, ...]
    depends_on: tuple[str, ...]
    fingerprint: str


@dataclass(frozen=True)
class ExecutableGraph:
    """A plan version that compiled: nodes in topological order and its deliverable."""

    document: PlanDocument
    nodes: Mapping[str, ExecutableNode]
    order: tuple[str, ...]
    deliverable: str
    # The steps' arguments as canonical JSON, by the arguments' id, as the compiler wrote
    # them to hash them: the content hash writes them again otherwise. The document holds
    # the arguments, so their ids stay theirs while the graph lives.
    canonical_args: Mapping[int, str] = field(default_factory=dict, compare=False, repr=False)

    @cached_property
    def content_hash(self) -> str:
        """The document's ``forge.plan.content_hash``, matching the graph to its version.
        Computed on first read: it serialises the whole document, which alone costs
        about a topological sort of the plan."""
        return content_hash(self.document, self.canonical_args)

    def dependents(self, node_id: str) -> tuple[str, ...]:
        """The ids of the nodes that depend on ``node_id`` directly, in topological
        order. Raises ``KeyError`` for an id that is not a node."""
        return self._dependents[node_id]

    @cached_property
    def _dependents(self) -> Mapping[str, tuple[str, ...]]:
        found: dict[str, list[str]] = {node_id: [] for node_id in self.order}
        for node_id in self.order:
            for dep in self.nodes[node_id].depends_on:
                found[dep].append(node_id)
        return {node_id: tuple(ids) for node_id, ids in found.items()}

    @property
    def data_edges(self) -> tuple[tuple[str, str, Reference], ...]:
        """Every ``(source, step, reference)``: a step taking a value from an ancestor's
        output, in topological order of the step."""
        return tuple(
            (reference.step, node_id, reference)
            for node_id in self.order
            if (binding := self.nodes[node_id].binding) is not None
            for reference in binding.references
        )

    @property
    def edges(self) -> tuple[tuple[str, str], ...]:
        """Every ``(dependency, dependent)`` pair, in topological order of the dependent."""
        return tuple(
            (dep, node_id) for node_id in self.order for dep in self.nodes[node_id].depends_on
        )

    def to_data(self) -> dict[str, Any]:
        return {
            "content_hash": self.content_hash,
            "deliverable": self.deliverable,
            "order": list(self.order),
            "nodes": [self.nodes[node_id].to_data() for node_id in self.order],
            "edges": [[dep, node_id] for dep, node_id in self.edges],
            "data_edges": self._data_edges(),
        }

    def plain_data(self) -> dict[str, Any]:
        """``to_data()`` for ``forge.plan.jsontext.indented_plain``: the same JSON, the
        nodes, edges and data edges written in one pass."""
        nodes = self.nodes
        written = []
        edges: list[tuple[str, str]] = []
        data_edges: list[dict[str, str]] = []
        for node_id in self.order:
            node = nodes[node_id]
            written.append(node.plain_data())
            for dep in node.depends_on:
                edges.append((dep, node_id))
            binding = node.binding
            if binding is not None and binding.references:
                data_edges.extend(_data_edge(node_id, ref) for ref in binding.references)
        return {
            "content_hash": self.content_hash,
            "deliverable": self.deliverable,
            "order": self.order,
            "nodes": written,
            "edges": edges,
            "data_edges": data_edges,
        }

    def _data_edges(self) -> list[dict[str, str]]:
        return [_data_edge(node_id, reference) for _, node_id, reference in self.data_edges]


def _data_edge(node_id: str, reference: Reference) -> dict[str, str]:
    return {
        "source": reference.step,
        "target": node_id,
        "path": reference.path_text,
        "at": location_text(reference.at),
    }


@dataclass(frozen=True)
class PerformedSideEffect:
    """A non-repeatable side effect a run of an earlier version already carried out
    (SPEC section 3's ``performed_side_effects``), handed to the compiler on replan."""

    tool: str
    step_id: str
    args_hash: str

    def to_data(self) -> dict[str, str]:
        return {"tool": self.tool, "step": self.step_id, "args_hash": self.args_hash}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> PerformedSideEffect:
        return cls(
            tool=str(data["tool"]), step_id=str(data["step"]), args_hash=str(data["args_hash"])
        )
