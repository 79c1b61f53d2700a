"""Diagnostics: every problem the compiler finds, as data the editor can paint.

A diagnostic has a stable ``code``, a severity, a message for people, and the node ids and
edges it concerns; edges always point from a dependency to its dependent, ``[dep, step]``.
``SEVERITIES`` is the one table of codes: the fourteen of SPEC section 4 in its order, and
eleven deviations from it. ``invalid_check`` (error, listed after ``invalid_args``), for a
``done_when`` check that is not valid JMESPath; the SPEC has no code for it, and folding it
into ``unverifiable_done_when`` (a warning) would let a plan compile whose contract can
never be evaluated. ``tool_unavailable`` (error, after ``unknown_tool``), for a tool of an
MCP server that does not answer now: calling it ``unknown_tool`` would send the author
looking for a typo, when the server must be brought back. ``invalid_reference`` (error),
for an argument that takes a value from another step's output wrongly
(``forge.plan.references``: bad syntax, an unknown step, the step itself, a step that is
not an ancestor, or a path the tool's declared output lacks). ``agent_without_tools``
(error, after ``unknown_tool``), for a step with neither a ``tool`` nor ``tools_allowed``:
an agent step that may call nothing yet, as every new step in the editor and every node of
an imported Mermaid flowchart starts. ``unknown_tool`` there told the author of a tool
that does not exist when none had been chosen. ``invalid_milestone`` and
``milestone_out_of_order`` (errors) and ``plan_without_milestones`` (a warning, past a
configured size) check the plan's milestones (``forge.compiler.milestones``);
``missing_done_when`` and ``missing_rollback_hint`` (warnings) are seed 003's launch
checklist (``forge.compiler.checklist``). ``host_not_allowed`` (error, after
``unauthorized_tool``): an ``http_request`` whose URL, written in the plan, names a host
off the deployment's allow list, which its runner would refuse (``forge.tools.hosts``).
``flattened_decision`` (a warning) is not the compiler's but an import's: a Mermaid
decision read as an ordinary step whose branches all run
(``forge.plan.formats.mermaid_read``); ``CompileResult.noting`` adds it to a result.

A diagnostic may carry a ``hint``: how to fix it, in the words of the editor and of the
plan format (``to_data`` includes it only when there is one).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

__all__ = ["CODES", "SEVERITIES", "Diagnostic", "Severity", "name_list", "ordered"]

Severity = Literal["error", "warning", "info"]

SEVERITIES: Mapping[str, Severity] = MappingProxyType(
    {
        "cycle": "error",
        "missing_dependency": "error",
        "duplicate_id": "error",
        "unknown_tool": "error",
        "agent_without_tools": "error",
        "tool_unavailable": "error",
        "unauthorized_tool": "error",
        "host_not_allowed": "error",
        "invalid_args": "error",
        "invalid_check": "error",
        "invalid_reference": "error",
        "invalid_milestone": "error",
        "milestone_out_of_order": "error",
        "nonterminal_deliverable": "error",
        "missing_deliverable": "error",
        "unreachable_deliverable": "warning",
        "budget_exceeded_statically": "warning",
        "unverifiable_done_when": "warning",
        "vague_step": "warning",
        "repeats_side_effect": "warning",
        "missing_done_when": "warning",
        "missing_rollback_hint": "warning",
        "plan_without_milestones": "warning",
        "flattened_decision": "warning",
        "approval_required": "info",
    }
)
CODES: tuple[str, ...] = tuple(SEVERITIES)

_SEVERITY_RANK = {"error": 0, "warning": 1, "info": 2}
_CODE_RANK = {code: rank for rank, code in enumerate(CODES)}
_NAMES_SHOWN = 10


@dataclass(frozen=True)
class Diagnostic:
    code: str
    severity: Severity
    message: str
    nodes: tuple[str, ...] = ()
    edges: tuple[tuple[str, str], ...] = ()
    hint: str = ""  # how to fix it, when the message alone does not say

    @classmethod
    def of(
        cls,
        code: str,
        message: str,
        nodes: Iterable[str] = (),
        edges: Iterable[tuple[str, str]] = (),
        *,
        hint: str = "",
    ) -> Diagnostic:
        """A diagnostic with the severity ``SEVERITIES`` gives ``code`` (``KeyError`` if
        the code is not in the table)."""
        return cls(code, SEVERITIES[code], message, tuple(nodes), tuple(edges), hint)

    def to_data(self) -> dict[str, Any]:
        """SPEC's fields, and ``hint`` only when there is one."""
        data: dict[str, Any] = {
            "code": self.code,
            "severity": self.severity,
            "message": self.message,
            "nodes": list(self.nodes),
            "edges": [[source, target] for source, target in self.edges],
        }
        if self.hint:
            data["hint"] = self.hint
        return data


def ordered(diagnostics: Iterable[Diagnostic]) -> tuple[Diagnostic, ...]:
    """Errors, then warnings, then infos; within a severity by code in table order.

    The sort is stable, so diagnostics of one code keep the order they were found in,
    which the compiler makes document order.
    """
    return tuple(
        sorted(
            diagnostics,
            key=lambda d: (_SEVERITY_RANK[d.severity], _CODE_RANK.get(d.code, len(CODES))),
        )
    )


def name_list(ids: Sequence[str]) -> str:
    """``ids`` for a message: the first few quoted, the rest only counted, so a message
    about a 100,000-step plan stays one line."""
    shown = ", ".join(repr(item) for item in ids[:_NAMES_SHOWN])
    hidden = len(ids) - _NAMES_SHOWN
    return f"{shown} and {hidden} more" if hidden > 0 else shown
