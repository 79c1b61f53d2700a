"""``GraphCompiler``: the deterministic seam between a plan and the Scheduler.

One ``compile`` call runs every check and returns every problem at once; a plan with any
error-severity diagnostic gets no graph, so it can never reach the Scheduler. Diagnostics
come errors first, then warnings, then infos, by code in the order of
``diagnostics.SEVERITIES``, and within one code in document order; the same document gives
the same diagnostics, node ids, order and content hash every time. The checks live in
their own modules: ``structure`` (ids, dependencies, cycles), ``deliverable``,
``bindings`` (tools, policy, arguments, side effects), ``references`` (arguments that
take values from earlier steps), ``contracts`` (descriptions and ``done_when``),
``checklist`` (seed 003's launch checklist), ``milestones`` and ``budget``. A plan that
compiles also gets its ``impact`` (``forge.compiler.impact``): what it will touch, ask,
cost and take, computed from the graph when first read.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType
from typing import Any

import msgspec

from forge.compiler.bindings import BindingResolver
from forge.compiler.budget import check_budget
from forge.compiler.checklist import LaunchChecklist
from forge.compiler.contracts import ContractChecker
from forge.compiler.deliverable import resolve_deliverable
from forge.compiler.diagnostics import Diagnostic, ordered
from forge.compiler.graph import ExecutableGraph, ExecutableNode, PerformedSideEffect
from forge.compiler.impact import Impact, impact_of
from forge.compiler.milestones import DEFAULT_WARN_STEPS, check_milestones
from forge.compiler.references import ReferenceChecker
from forge.compiler.structure import analyse_structure
from forge.plan import ImportWarning, PlanDocument
from forge.plan.jsontext import compact_json, encode_plain, indented_json, indented_plain
from forge.tools import PolicyEngine, ToolRegistry

__all__ = ["CompileResult", "GraphCompiler"]


@dataclass(frozen=True)
class CompileResult:
    """Every diagnostic, and the graph when no diagnostic is an error."""

    diagnostics: tuple[Diagnostic, ...]
    graph: ExecutableGraph | None

    @property
    def ok(self) -> bool:
        """Whether no diagnostic is an error (and so there is a graph)."""
        return not self.errors

    @property
    def errors(self) -> tuple[Diagnostic, ...]:
        return tuple(d for d in self.diagnostics if d.severity == "error")

    @property
    def warnings(self) -> tuple[Diagnostic, ...]:
        return tuple(d for d in self.diagnostics if d.severity == "warning")

    @cached_property
    def impact(self) -> Impact | None:
        """What the compiled plan will touch, ask, cost and take; ``None`` without a
        graph. Computed when first read (a compile that only checks never pays for it)."""
        return None if self.graph is None else impact_of(self.graph)

    def noting(self, warnings: Iterable[ImportWarning]) -> CompileResult:
        """This result with what importing the document warned of among its diagnostics
        (``forge.plan.import_plan``): how the CLI, ``POST /compile`` and a version
        imported from text show them beside the compiler's. Warnings never make a result
        fail; without any, this result itself."""
        extra = [Diagnostic.of(w.code, w.message, w.nodes, w.edges, hint=w.hint) for w in warnings]
        if not extra:
            return self
        return CompileResult(ordered((*self.diagnostics, *extra)), self.graph)

    def to_data(self) -> dict[str, Any]:
        """The body of ``POST /compile``: ``{"ok", "diagnostics", "graph", "impact"}``."""
        impact = self.impact
        return {
            "ok": self.ok,
            "diagnostics": [d.to_data() for d in self.diagnostics],
            "graph": None if self.graph is None else self.graph.to_data(),
            "impact": None if impact is None else impact.to_data(),
        }

    def to_json(self) -> str:
        """``indented_json(self.to_data())``: the same text."""
        return self.to_json_bytes().decode(errors="surrogatepass")

    def to_json_bytes(self, *, indent: bool = True) -> bytes:
        """``to_json()`` as UTF-8 (``compact_json`` of the data when not ``indent``),
        written by msgspec from data built for it (``forge.plan.jsontext``): the standard
        library's way took longer to write a 10,000-step result than to compile it."""
        graph = self.graph
        impact = self.impact
        try:
            data = {
                "ok": self.ok,
                "diagnostics": [d.to_data() for d in self.diagnostics],
                "graph": None if graph is None else graph.plain_data(),
                "impact": None if impact is None else impact.plain_data(),
            }
            return indented_plain(data) if indent else encode_plain(data)
        except (msgspec.MsgspecError, TypeError, ValueError):  # NaN, a lone surrogate
            text = (indented_json if indent else compact_json)(self.to_data())
            return text.encode(errors="surrogatepass")


class GraphCompiler:
    """Compiles plan documents against one tool registry and one policy."""

    def __init__(
        self,
        registry: ToolRegistry,
        policy: PolicyEngine,
        *,
        milestone_warn_steps: int = DEFAULT_WARN_STEPS,
    ) -> None:
        """``milestone_warn_steps``: a plan of more steps without milestones draws
        ``plan_without_milestones`` (0: never)."""
        self.registry = registry
        self.policy = policy
        self.milestone_warn_steps = milestone_warn_steps

    def compile(
        self, document: PlanDocument, performed_side_effects: Iterable[PerformedSideEffect] = ()
    ) -> CompileResult:
        """Check ``document`` and, when nothing is an error, build its ``ExecutableGraph``.

        ``performed_side_effects`` are those of earlier versions' runs; a step that would
        repeat one draws ``repeats_side_effect``. Never raises for a bad plan: every
        problem becomes a diagnostic.
        """
        out: list[Diagnostic] = []
        structure = analyse_structure(document.steps)
        out.extend(structure.diagnostics)
        deliverable = resolve_deliverable(document, structure, out)
        resolver = BindingResolver(self.registry, self.policy, document, performed_side_effects)
        contracts = ContractChecker()
        checklist = LaunchChecklist()
        nodes: dict[str, ExecutableNode] = {}
        first = structure.steps
        depends_on = structure.depends_on
        resolve, check_contract, check_launch = resolver.resolve, contracts.check, checklist.check
        for step in document.steps:
            step_id = step.id
            binding, allowed, reasons = resolve(step, out)
            check_contract(step, out)
            check_launch(step, binding, allowed)
            if first[step_id] is step and step_id not in nodes:
                nodes[step_id] = ExecutableNode(
                    step_id, step, depends_on[step_id], binding, allowed, reasons
                )
        if resolver.templates:
            references = ReferenceChecker(self.registry, structure)
            for step, spec, template in resolver.templates:
                references.check(step, spec, template, out)
        out.extend(checklist.diagnostics())
        out.extend(check_milestones(document, structure, self.milestone_warn_steps))
        out.extend(check_budget(document))
        diagnostics = ordered(out)
        if deliverable is None or any(d.severity == "error" for d in diagnostics):
            return CompileResult(diagnostics, None)
        order = structure.order
        if tuple(nodes) != order:
            nodes = {step_id: nodes[step_id] for step_id in order}
        graph = ExecutableGraph(
            document, MappingProxyType(nodes), order, deliverable, resolver.canonical_args
        )
        return CompileResult(diagnostics, graph)
