"""Fixtures for the runtime: compile small plans with the real compiler and run them with
the real ToolExecutor and the in-process runner of the side-effect-free built-ins."""

from __future__ import annotations

import pytest

from forge.compiler import GraphCompiler
from forge.plan import from_data
from forge.runners.basic import BASIC_TOOLS, BasicRunner
from forge.runtime import ApprovalSigner, InMemoryRecordStore, ToolExecutor
from forge.runtime.gate import ApprovalGate
from forge.tools import DEFAULT_POLICY, Policy, PolicyEngine, builtin_registry

SIGNER = ApprovalSigner(b"test-approval-key-0123456789")


def plan(*steps, **fields):
    """A plan document from step dicts; descriptions default to something concrete."""
    data = {"goal": "Generate a supplier risk report", **fields, "steps": []}
    for step in steps:
        data["steps"].append({"description": f"Run step {step['id']} for the report", **step})
    return from_data(data)


def compile_graph(document, policy: Policy = DEFAULT_POLICY):
    result = GraphCompiler(builtin_registry(), PolicyEngine(policy)).compile(document)
    assert result.graph is not None, [d.to_data() for d in result.diagnostics]
    return result.graph


@pytest.fixture
def records():
    return InMemoryRecordStore()


@pytest.fixture
def executor(records):
    runner = BasicRunner()
    return ToolExecutor(
        builtin_registry(),
        PolicyEngine(DEFAULT_POLICY),
        records,
        dict.fromkeys(BASIC_TOOLS, runner),
        approvals=SIGNER,
    )


GATE = ApprovalGate(SIGNER)


def approved(graph, version: int = 1, plan_id: str = ""):
    """A person's approval of ``graph`` as version ``version`` (the gate clears it)."""
    return GATE.approve(
        plan_id=plan_id,
        version=version,
        content_hash=graph.content_hash,
        author="alice",
        approver="bob",
    )
