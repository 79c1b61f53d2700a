"""Export a plan as a readable Mermaid ``flowchart TD`` that imports back unchanged.

The diagram shows what Mermaid can: the goal as the front-matter title, one node per step
labelled with its description, an edge from each dependency to its dependent, and the
deliverable styled. Everything else travels in ``%%`` comment lines that Mermaid ignores:
``%% forge: {...}`` holds the plan-level fields and ``%% forge-step <node>: {...}`` a step's
other fields. A step whose id Mermaid cannot spell (``end``, ``-a``, a repeated id) gets a
node id of its own and its real ``id`` in that comment; a step whose ``depends_on`` the
edges cannot say (a missing step, a repeat) gets ``depends_on`` there too.
"""

from __future__ import annotations

from typing import Any

import yaml

from forge.plan.codec import to_data
from forge.plan.document import PlanDocument
from forge.plan.formats.drawing import drawn_deliverable
from forge.plan.formats.mermaid_text import comment_json, escape_label, is_mermaid_id

__all__ = ["dump_mermaid"]

_DELIVERABLE_STYLE = "fill:#fef3c7,stroke:#b45309,stroke-width:3px"


def dump_mermaid(document: PlanDocument) -> str:
    data = to_data(document)
    nodes = _node_ids(document)
    first: dict[str, str] = {}  # step id -> node of its first step
    for step, node in zip(document.steps, nodes, strict=True):
        first.setdefault(step.id, node)
    plan = {key: value for key, value in data.items() if key not in ("goal", "steps")}
    lines = [
        "---",
        f"title: {_yaml_string(document.goal)}",
        "---",
        "flowchart TD",
        "    %% Exported by Forge: the %% forge lines carry what the diagram cannot show.",
        f"    %% forge: {comment_json(plan)}",
    ]
    edges: list[str] = []
    for step, node, step_data in zip(document.steps, nodes, data["steps"], strict=True):
        drawn = list(dict.fromkeys(dep for dep in step.depends_on if dep in first))
        meta = _step_meta(step_data, aliased=node != step.id, drawn=drawn)
        if meta:
            lines.append(f"    %% forge-step {node}: {comment_json(meta)}")
        label = f'["{escape_label(step.description)}"]' if step.description else ""
        lines.append(f"    {node}{label}")
        edges.extend(f"    {first[dep]} --> {node}" for dep in drawn)
    lines.extend(edges)
    deliverable = drawn_deliverable(document)
    if deliverable is not None:
        lines.append(f"    classDef deliverable {_DELIVERABLE_STYLE}")
        lines.append(f"    class {first[deliverable]} deliverable")
    return "\n".join(lines) + "\n"


def _node_ids(document: PlanDocument) -> list[str]:
    """A distinct Mermaid node id per step: the step id wherever Mermaid can spell it."""
    taken = set(document.step_ids)
    used: set[str] = set()
    nodes: list[str] = []
    for index, step in enumerate(document.steps, 1):
        node = step.id
        if not is_mermaid_id(node) or node in used:
            node = f"step_{index}"
            while node in taken or node in used:
                node += "_"
        used.add(node)
        nodes.append(node)
    return nodes


def _step_meta(step_data: dict[str, Any], *, aliased: bool, drawn: list[str]) -> dict[str, Any]:
    meta = {k: v for k, v in step_data.items() if k not in ("id", "description", "depends_on")}
    extra: dict[str, Any] = {}
    if aliased:
        extra["id"] = step_data["id"]
    if drawn != step_data["depends_on"]:
        extra["depends_on"] = step_data["depends_on"]
    return extra | meta


def _yaml_string(text: str) -> str:
    # Double-quoted and unfolded, so any goal stays on the one title line: PyYAML then
    # escapes newlines and every line-separator character.
    dumped: str = yaml.safe_dump(text, default_style='"', allow_unicode=True, width=1 << 30)
    return dumped.rstrip("\n")
