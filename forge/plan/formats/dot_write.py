"""Export a plan as a Graphviz ``digraph`` (export only; DOT is not read back).

Every id and label is a double-quoted DOT string with backslashes, quotes and line breaks
escaped, so no description can end a string, add attributes or statements, or become an
HTML-like label (those need ``<...>`` outside quotes): ``<img onerror=...>`` stays text.
"""

from __future__ import annotations

from forge.plan.document import PlanDocument
from forge.plan.formats.drawing import drawn_deliverable

__all__ = ["dot_string", "dump_dot"]

_BREAKS = {"\r\n": "\n", "\r": "\n", "\x85": "\n", "\u2028": "\n", "\u2029": "\n"}


def dump_dot(document: PlanDocument) -> str:
    deliverable = drawn_deliverable(document)
    lines = [
        "digraph plan {",
        f"    graph [rankdir=TB, labelloc=t, label={dot_string(document.goal)}];",
        '    node [shape=box, style="rounded", fontname="Helvetica"];',
        '    edge [color="#64748b"];',
    ]
    for step in document.steps:
        label = f"{step.id}\n{step.description}" if step.description else step.id
        attributes = [f"label={dot_string(label)}"]
        if step.id == deliverable:
            attributes.append(
                'style="rounded,filled,bold", fillcolor="#fef3c7", color="#b45309", penwidth=2'
            )
        lines.append(f"    {dot_string(step.id)} [{', '.join(attributes)}];")
    for step in document.steps:
        lines.extend(f"    {dot_string(dep)} -> {dot_string(step.id)};" for dep in step.depends_on)
    lines.append("}")
    return "\n".join(lines) + "\n"


def dot_string(text: str) -> str:
    """``text`` as a double-quoted DOT string on one line; line breaks become ``\\n``."""
    for old, new in _BREAKS.items():
        text = text.replace(old, new)
    out: list[str] = []
    for char in text:
        if char in '\\"':
            out.append("\\" + char)
        elif char == "\n":
            out.append("\\n")
        elif not char.isprintable():
            out.append("\ufffd")  # tabs and control characters have no place in a label
        else:
            out.append(char)
    return '"' + "".join(out) + '"'
