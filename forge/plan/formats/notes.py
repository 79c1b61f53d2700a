"""What an import tells the author besides the document: ``ImportWarning``s, for what
the source says that a plan cannot (a Mermaid decision's branches, which a plan runs
all of). A warning is shaped like a compiler diagnostic of severity ``warning``, so the
CLI, ``POST /compile`` and the editor show it with the compiler's own
(``forge.compiler.CompileResult.noting``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from forge.plan.document import PlanDocument

__all__ = ["ImportWarning", "ImportedPlan"]


@dataclass(frozen=True)
class ImportWarning:
    """A stable ``code``, the message, the step ids and ``[from, to]`` dependencies it
    concerns, and how to fix it."""

    code: str
    message: str
    nodes: tuple[str, ...] = ()
    edges: tuple[tuple[str, str], ...] = ()
    hint: str = ""


@dataclass(frozen=True)
class ImportedPlan:
    """A document as read from its source text, with what the reading warns of."""

    document: PlanDocument
    warnings: tuple[ImportWarning, ...] = ()
