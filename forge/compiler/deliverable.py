"""The deliverable: the one terminal step whose result is the plan's result.

``document.deliverable`` names it; without that, a plan with exactly one terminal step
delivers that step, as the seed's example expects. A named deliverable must be a step
(``missing_deliverable``) that no step depends on (``nonterminal_deliverable``). Steps the
deliverable does not depend on, directly or not, would run for nothing: they draw one
``unreachable_deliverable`` warning listing them all.
"""

from __future__ import annotations

from forge.compiler.diagnostics import Diagnostic, name_list
from forge.compiler.structure import Structure
from forge.plan import PlanDocument

__all__ = ["resolve_deliverable"]


def resolve_deliverable(
    document: PlanDocument, structure: Structure, out: list[Diagnostic]
) -> str | None:
    """The deliverable's id, or ``None`` when there is none to find; problems go to ``out``."""
    deliverable = document.deliverable
    if deliverable is None:
        if not structure.steps:
            message = "plan has no steps, so nothing to deliver"
            out.append(Diagnostic.of("missing_deliverable", message))
            return None
        terminals = structure.terminals()
        if len(terminals) != 1:
            message = f"plan has {len(terminals)} terminal steps; name one as deliverable"
            out.append(Diagnostic.of("missing_deliverable", message, terminals))
            return None
        deliverable = terminals[0]
    elif deliverable not in structure.steps:
        message = f"deliverable {deliverable!r} is not a step of this plan"
        out.append(Diagnostic.of("missing_deliverable", message, (deliverable,)))
        return None
    dependents = structure.dependents(deliverable) if deliverable in structure.depended_on else []
    if dependents:
        message = (
            f"deliverable {deliverable!r} must be a terminal step, but "
            f"{name_list(dependents)} depend{'s' if len(dependents) == 1 else ''} on it"
        )
        edges = [(deliverable, step_id) for step_id in dependents]
        out.append(
            Diagnostic.of("nonterminal_deliverable", message, (deliverable, *dependents), edges)
        )
    unreachable: list[str] = []
    # Every step of an acyclic graph leads to a terminal step, so when the deliverable is
    # the only one, every step leads to it: no need to walk its lineage.
    acyclic = len(structure.order) == len(structure.steps)
    only_terminal = len(structure.steps) - len(structure.depended_on) == 1 and not dependents
    if not (acyclic and only_terminal):
        lineage = structure.lineage(deliverable)
        unreachable = [step_id for step_id in structure.steps if step_id not in lineage]
    if unreachable:
        message = (
            f"{len(unreachable)} step(s) do not lead to deliverable {deliverable!r} and would "
            f"run for nothing: {name_list(unreachable)}"
        )
        out.append(Diagnostic.of("unreachable_deliverable", message, unreachable))
    return deliverable
