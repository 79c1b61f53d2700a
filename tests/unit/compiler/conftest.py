"""Fixtures for the compiler: plans written as the plain data a user would import.

``step("b", "a", tool="sleep", args={"seconds": 1})`` is a clean step ``b`` depending on
``a``: a concrete ``echo`` call with a specific description and a ``done_when`` its output
meets, so it draws no diagnostic of its own. ``compile_plan([...steps], **plan_fields)`` builds the
document with ``forge.plan.from_data`` and compiles it with the built-in tools under
``DEFAULT_POLICY``; pass ``policy=`` for another one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pytest

from forge.compiler import CompileResult, GraphCompiler, PerformedSideEffect
from forge.plan import from_data
from forge.tools import DEFAULT_POLICY, Policy, PolicyEngine, builtin_registry

StepFactory = Callable[..., dict[str, Any]]
CompilePlan = Callable[..., CompileResult]


def make_step(step_id: str, *depends_on: str, **fields: Any) -> dict[str, Any]:
    return {
        "id": step_id,
        "description": f"Write the {step_id} section of the supplier report",
        "depends_on": list(depends_on),
        "tool": "echo",
        "args": {"section": step_id},
        "done_when": {"required_keys": ["section"]},
        **fields,
    }


def make_plan(steps: Iterable[dict[str, Any]], **fields: Any) -> dict[str, Any]:
    return {"goal": "Generate a supplier risk report", **fields, "steps": list(steps)}


@pytest.fixture
def step() -> StepFactory:
    return make_step


@pytest.fixture
def compile_plan() -> CompilePlan:
    def compile_plan(
        steps: Iterable[dict[str, Any]],
        *,
        policy: Policy = DEFAULT_POLICY,
        performed: Iterable[PerformedSideEffect] = (),
        **fields: Any,
    ) -> CompileResult:
        compiler = GraphCompiler(builtin_registry(), PolicyEngine(policy))
        return compiler.compile(from_data(make_plan(steps, **fields)), performed)

    return compile_plan
