"""The tool catalogue as plan authors see it: each tool's contract and what policy says.

One entry per tool of the deployment's registry, by name, with whether the policy lets a
plan use it at all and whether its calls always wait for a person's approval (a plan's
own ``requires_approval_before`` can add more, never fewer).
"""

from __future__ import annotations

import json
from typing import Any

from forge.tools import PolicyEngine, ToolSpec
from plans import compilation

__all__ = ["tool_catalogue"]


def tool_catalogue() -> list[dict[str, Any]]:
    engine = compilation.compiler().policy
    return [_entry(spec, engine) for spec in compilation.registry()]


def _entry(spec: ToolSpec, engine: PolicyEngine) -> dict[str, Any]:
    decision = engine.decide(spec)
    return {
        "name": spec.name,
        "description": spec.description,
        "args_schema": json.loads(json.dumps(spec.args_schema, default=dict)),  # plain
        "permission_scope": spec.permission_scope,
        "side_effect": spec.side_effect,
        "idempotent": spec.idempotent,
        "risk": spec.risk,
        "default_timeout_s": spec.default_timeout_s,
        "source": spec.source,
        # what a later step can take from its output ($from, docs/plan-format.md)
        "output_schema": None
        if spec.output_schema is None
        else json.loads(json.dumps(spec.output_schema, default=dict)),
        "echoes_args": spec.echoes_args,
        "allowed": decision.allowed,
        "requires_approval": decision.requires_approval,
        "policy_reasons": list(decision.approval_reasons)
        if decision.allowed
        else [decision.reason],
    }
