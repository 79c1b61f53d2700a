"""Agent steps run for real: the built-in registry and runners, the real ToolExecutor and
LocalRun, a ScriptedModel or a local HTTP server speaking chat completions."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from forge.agents import AgentRunner
from forge.compiler import GraphCompiler
from forge.models import ModelPort
from forge.plan import from_data
from forge.runners import builtin_runners
from forge.runtime import ApprovalSigner, InMemoryRecordStore, ToolExecutor
from forge.runtime.gate import ApprovalGate
from forge.runtime.local import LocalRun, LocalRunResult
from forge.tools import DEFAULT_POLICY, PolicyEngine, builtin_registry

from ..models.openai_fake import FakeOpenAI, running

SIGNER = ApprovalSigner(b"agent-tests-approval-key-0123456")


def agent_plan(*steps: dict[str, Any], **fields: Any):
    data = {"goal": "Generate a supplier risk report", **fields, "steps": []}
    for step in steps:
        data["steps"].append({"description": f"Work out the {step['id']} of the report", **step})
    return from_data(data)


@dataclass
class Harness:
    workspace: Path
    records: InMemoryRecordStore
    executor: ToolExecutor
    compiler: GraphCompiler

    def run(self, document, model: ModelPort, **options: Any) -> LocalRunResult:
        max_turns = options.pop("max_turns", 8)
        agent = AgentRunner(model, self.executor, max_turns=max_turns)
        local = LocalRun(self.compiler, self.executor, self.workspace, agent=agent,
                         signer=SIGNER, **options)  # fmt: skip
        if "approver" in options:
            return local.run(document)
        # The plan itself was approved by someone else; its steps wait as they would.
        approval = ApprovalGate(SIGNER).approve(
            plan_id=local.plan_id,
            version=1,
            content_hash=self.graph(document).content_hash,
            author="alice",
            approver="bob",
        )
        return local.run(document, approval)

    def graph(self, document):
        result = self.compiler.compile(document)
        assert result.graph is not None, [d.to_data() for d in result.diagnostics]
        return result.graph


@pytest.fixture
def harness(tmp_path: Path) -> Harness:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    registry = builtin_registry()
    policy = PolicyEngine(DEFAULT_POLICY)
    records = InMemoryRecordStore()
    executor = ToolExecutor(registry, policy, records, builtin_runners(), approvals=SIGNER)
    return Harness(workspace, records, executor, GraphCompiler(registry, policy))


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    with running() as server:
        yield server
