"""What the diagram exports (Mermaid, DOT) agree on: which step to draw as the deliverable.

The explicit ``deliverable`` when it names a step; otherwise, as the specification reads a
plan without one, the only terminal step if there is exactly one.
"""

from __future__ import annotations

from forge.plan.document import PlanDocument

__all__ = ["drawn_deliverable"]


def drawn_deliverable(document: PlanDocument) -> str | None:
    if document.deliverable is not None:
        return document.deliverable if document.deliverable in document.step_ids else None
    terminal = document.terminal_step_ids()
    return terminal[0] if len(terminal) == 1 else None
