"""Import a Mermaid flowchart as a plan: an edge ``a --> b`` means b depends on a.

A hand-drawn flowchart gives structure only: steps (in order of first appearance) whose
description is the node's label (empty for a bare id), and dependencies from the edges.
A plan has no conditions: a decision (a rhombus, ``id{question}``) becomes a step like
any other and every branch after it runs. Each branch's link text is kept in its step's
description ("Score it (if Complete?: yes)"), and ``read_mermaid`` warns of each such
decision (``flattened_decision``, naming it and its branches).
The goal is the front-matter ``title``, else a ``%% goal: ...`` comment, else
``"Imported from Mermaid"`` (a default rather than an error, so any flowchart imports and
the editor can ask for a better goal). The ``%% forge`` comments written by ``dump_mermaid``
restore every other field, so an exported plan imports back equal to the original.
"""

from __future__ import annotations

import json
import re
from typing import Any

from forge.errors import PlanDocumentError
from forge.plan.codec import from_data
from forge.plan.document import PlanDocument
from forge.plan.formats.json_io import parse_json
from forge.plan.formats.mermaid_parse import Flowchart, mermaid_error, parse_flowchart
from forge.plan.formats.notes import ImportedPlan, ImportWarning
from forge.plan.formats.yaml_safe import parse_yaml
from forge.plan.limits import ImportLimits

__all__ = ["DEFAULT_GOAL", "FLATTENED_HINT", "load_mermaid", "read_mermaid"]

DEFAULT_GOAL = "Imported from Mermaid"
_PLAN_META = re.compile(r"forge:\s*(?P<json>.*)")
_STEP_META = re.compile(r"forge-step\s+(?P<node>\S+?):\s*(?P<json>.*)")
_GOAL = re.compile(r"goal:\s*(?P<goal>.*)")
_PLAN_KEYS = {"schema", "deliverable", "risk_level", "requires_approval_before", "budget",
              "max_replans", "replan", "milestones"}  # fmt: skip
_STEP_KEYS = {"id", "depends_on", "tool", "args", "tools_allowed", "done_when", "timeout_s",
              "retries", "rollback_hint", "estimate"}  # fmt: skip


FLATTENED_HINT = (
    "keep the branch that should run and delete the others, or make the choice inside one "
    "step (an agent step can decide with its tools); each branch's label is kept in its "
    "step's description"
)
_DECISION = "{"  # a rhombus, id{question}; "{{" is a hexagon


def load_mermaid(text: str, limits: ImportLimits) -> PlanDocument:
    return read_mermaid(text, limits).document


def read_mermaid(text: str, limits: ImportLimits) -> ImportedPlan:
    """The plan, and a ``flattened_decision`` warning for each decision whose branches
    it runs all of."""
    chart = parse_flowchart(text, limits)
    limits.check_step_count(len(chart.labels))
    plan: dict[str, Any] | None = None
    steps: dict[str, dict[str, Any]] = {}
    goals: list[str] = []
    for number, comment in chart.comments:
        if match := _PLAN_META.fullmatch(comment):
            if plan is not None:
                raise mermaid_error(number, "a second '%% forge:' line")
            plan = _meta(match["json"], number, _PLAN_KEYS, limits)
        elif match := _STEP_META.fullmatch(comment):
            node = match["node"]
            if node not in chart.labels:
                raise mermaid_error(number, f"'%% forge-step' names {node!r}, which is no node")
            if node in steps:
                raise mermaid_error(number, f"a second '%% forge-step' line for {node!r}")
            steps[node] = _meta(match["json"], number, _STEP_KEYS, limits)
        elif match := _GOAL.fullmatch(comment):
            goals.append(match["goal"].strip())
    goal = _title(chart, limits)
    if goal is None:
        goal = goals[0] if goals else DEFAULT_GOAL
    ids = {node: steps.get(node, {}).get("id", node) for node in chart.labels}
    decisions = _decisions(chart)
    data = (plan or {}) | {"goal": goal, "steps": _steps(chart, steps, ids, decisions)}
    document = from_data(data, limits)
    warnings = tuple(_flattened(chart, ids, node, branches) for node, branches in decisions)
    return ImportedPlan(document, warnings)


# A decision node and its branches: (target node, the link's text or None), in order.
_Decision = tuple[str, list[tuple[str, str | None]]]


def _decisions(chart: Flowchart) -> list[_Decision]:
    """The decisions whose flattening loses something: a rhombus with two branches or
    more, or with a labelled one (a lone unlabelled link from a rhombus is a step)."""
    branches: dict[str, list[tuple[str, str | None]]] = {}
    for source, target in chart.edges:
        if chart.shapes.get(source) == _DECISION:
            text = chart.edge_labels.get((source, target))
            branches.setdefault(source, []).append((target, text))
    return [
        (node, found)
        for node, found in branches.items()
        if len(found) > 1 or any(text for _, text in found)
    ]


def _question(chart: Flowchart, node: str) -> str:
    return chart.labels.get(node) or node


def _steps(
    chart: Flowchart,
    metas: dict[str, dict[str, Any]],
    ids: dict[str, Any],
    decisions: list[_Decision],
) -> list[dict[str, Any]]:
    depends_on: dict[str, list[Any]] = {node: [] for node in chart.labels}
    for source, target in chart.edges:
        depends_on[target].append(ids[source])
    # A branch keeps its link's text: "Score the supplier (if Is it complete?: yes)".
    conditions: dict[str, list[str]] = {}
    for node, branches in decisions:
        for target, text in branches:
            if text:
                conditions.setdefault(target, []).append(f"(if {_question(chart, node)}: {text})")
    return [
        {
            "id": ids[node],
            "description": " ".join([label, *conditions[node]] if label else conditions[node])
            if node in conditions
            else label or "",
            "depends_on": depends_on[node],
        }
        | metas.get(node, {})
        for node, label in chart.labels.items()
    ]


def _flattened(
    chart: Flowchart, ids: dict[str, Any], node: str, branches: list[tuple[str, str | None]]
) -> ImportWarning:
    step = str(ids[node])
    targets = [str(ids[target]) for target, _ in branches]
    named = [
        f"{target!r} ({text})" if text else repr(target)
        for target, (_, text) in zip(targets, branches, strict=True)
    ]
    listed = named[0] if len(named) == 1 else f"{', '.join(named[:-1])} and {named[-1]}"
    if len(named) == 1:
        runs = "its branch runs after it whatever the answer"
    elif len(named) == 2:
        runs = "both of its branches run after it"
    else:
        runs = f"all {len(named)} of its branches run after it"
    question = json.dumps(_question(chart, node), ensure_ascii=False)
    message = (
        f"decision {step!r} ({question}) is imported as an ordinary step: a plan has no "
        f"conditions, so {runs}: {listed}"
    )
    edges = tuple((step, target) for target in targets)
    return ImportWarning(
        "flattened_decision", message, (step, *targets), edges, hint=FLATTENED_HINT
    )


def _meta(text: str, number: int, allowed: set[str], limits: ImportLimits) -> dict[str, Any]:
    try:
        data = parse_json(text, limits)
    except PlanDocumentError as error:
        code = "invalid_mermaid" if error.code == "invalid_json" else error.code
        raise PlanDocumentError(
            f"line {number}: forge metadata: {error.message}", code=code, path=f"line {number}"
        ) from None
    if not isinstance(data, dict):
        raise mermaid_error(number, "forge metadata must be a JSON object")
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise mermaid_error(
            number, f"forge metadata cannot hold {', '.join(map(repr, unknown))} here"
        )
    return data


def _title(chart: Flowchart, limits: ImportLimits) -> str | None:
    if chart.front_matter is None:
        return None
    try:
        data = parse_yaml(chart.front_matter, limits)
    except PlanDocumentError as error:
        raise PlanDocumentError(
            f"front matter: {error.message}", code=error.code, path="front matter"
        ) from None
    if data is None:
        return None
    if not isinstance(data, dict):
        raise mermaid_error(2, "front matter must be a mapping such as 'title: ...'")
    title = data.get("title")
    if title is not None and not isinstance(title, str):
        raise mermaid_error(2, "front matter 'title' must be a string")
    return title
