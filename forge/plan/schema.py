"""The ``forge.plan/v1`` document as a JSON Schema (draft 2020-12), written by hand.

It tells a model, or an editor, what ``forge.plan.from_data`` accepts: the same fields,
types and id pattern, and no other field. It is a little stricter (``steps`` is required,
and an optional field is left out rather than null), so what it accepts ``from_data``
reads. It describes; ``from_data`` stays the one reader, and a document it accepts can
still fail to compile (a cycle, an unknown tool). ``LLMPlanner`` sends it as the
``response_format`` of endpoints that support structured output.
"""

from __future__ import annotations

from typing import Any

from forge.plan.limits import QUANTITY_LIMIT

__all__ = ["PLAN_SCHEMA"]

_ID = {"type": "string", "pattern": "^[A-Za-z0-9_.-]{1,64}$"}
_STRINGS = {"type": "array", "items": {"type": "string"}}
_COUNT = {"type": "integer", "minimum": 0, "maximum": QUANTITY_LIMIT}
_AMOUNT = {"type": "number", "minimum": 0, "maximum": QUANTITY_LIMIT}

PLAN_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "forge.plan/v1",
    "type": "object",
    "required": ["goal", "steps"],
    "additionalProperties": False,
    "properties": {
        "schema": {"const": "forge.plan/v1"},
        "goal": {"type": "string"},
        "deliverable": {**_ID, "description": "a terminal step; default: the only one"},
        "risk_level": {"enum": ["low", "medium", "high"]},
        "requires_approval_before": {
            **_STRINGS,
            "description": "permission scopes (mcp.<server> for a whole MCP server) or tool names",
        },
        "budget": {
            "type": "object",
            "additionalProperties": False,
            "properties": {"max_steps": _COUNT, "max_tokens": _COUNT, "max_cost": _AMOUNT},
        },
        "max_replans": _COUNT,
        "replan": {
            "enum": ["manual", "auto"],
            "description": "auto: the deployment's planner writes the next version on a "
            "worker when a run needs a replan (it still passes the approval gate)",
        },
        "steps": {"type": "array", "items": {"$ref": "#/$defs/step"}},
        "milestones": {
            "type": "array",
            "description": "groups of steps in run order; review: the run pauses after it",
            "items": {"$ref": "#/$defs/milestone"},
        },
    },
    "$defs": {
        "step": {
            "type": "object",
            "required": ["id"],
            "additionalProperties": False,
            "properties": {
                "id": _ID,
                "description": {"type": "string"},
                "depends_on": {"type": "array", "items": _ID},
                "tool": {"type": "string", "description": "a concrete call of this tool"},
                "args": {
                    "type": "object",
                    "description": (
                        "the call's arguments; a value may be taken from an earlier step's "
                        'output: {"$from": STEP, "path": "key.0.sub"}, or text made of '
                        'parts: {"$join": ["text", {"$from": ...}]}; {"$literal": VALUE} '
                        "passes VALUE as written (docs/plan-format.md)"
                    ),
                },
                "tools_allowed": {
                    **_STRINGS,
                    "description": "without tool: an agent step limited to these tools",
                },
                "done_when": {
                    "oneOf": [
                        {"type": "string"},
                        {
                            "type": "object",
                            "additionalProperties": False,
                            "properties": {
                                "description": {"type": "string"},
                                "required_keys": _STRINGS,
                                "checks": {
                                    **_STRINGS,
                                    "description": "JMESPath over the output, must be truthy",
                                },
                            },
                        },
                    ]
                },
                "timeout_s": {"type": "number", "exclusiveMinimum": 0, "maximum": QUANTITY_LIMIT},
                "retries": _COUNT,
                "rollback_hint": {"type": "string"},
                "estimate": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {"tokens": _COUNT, "cost": _AMOUNT, "seconds": _AMOUNT},
                },
            },
        },
        "milestone": {
            "type": "object",
            "required": ["id", "steps"],
            "additionalProperties": False,
            "properties": {
                "id": _ID,
                "title": {"type": "string"},
                "steps": {"type": "array", "items": _ID},
                "review": {"type": "boolean"},
            },
        },
    },
}
