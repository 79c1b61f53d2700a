"""What ``forge compile --json`` writes (``CompileResult.to_json_bytes``) is
``json.dumps(result.to_data(), indent=2, ensure_ascii=False)`` to the character (with
``separators=(",", ":")`` instead of the indent, on one line), and each
node's fingerprint the SHA-256 of its canonical content as the standard library writes
it: faster writers, the same text, so nothing stored or compared changes."""

from __future__ import annotations

import hashlib
import json
import math
import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import msgspec
import pytest

from forge.compiler import CompileResult, GraphCompiler
from forge.plan import from_data, load_plan
from forge.plan.limits import QUANTITY_LIMIT
from forge.tools import DEFAULT_POLICY, PolicyEngine, builtin_registry
from tests.example_plans import PLANS

# Floats json and msgspec spell differently (1e+16 and 1e16, 1e-05 and 0.00001), and others.
FLOATS = [1e16, 1.5e20, 1e-05, 2.5e-07, 1e-10, 0.0001, 0.1, 3.0, 7, 123.456]
AMOUNTS = [value for value in FLOATS if value <= QUANTITY_LIMIT]  # what a plan may estimate
TEXTS = ["Fetch the suppliers' list", 'say "hi": now', "é 中文 \u2028\t\n", "do it", ""]


def compiled(document: Any) -> CompileResult:
    return GraphCompiler(builtin_registry(), PolicyEngine(DEFAULT_POLICY)).compile(document)


def assert_written_as_the_standard_library_writes(result: CompileResult) -> None:
    assert result.to_json() == json.dumps(result.to_data(), indent=2, ensure_ascii=False)
    compact = json.dumps(result.to_data(), separators=(",", ":"), ensure_ascii=False)
    assert result.to_json_bytes(indent=False) == compact.encode(errors="surrogatepass")
    if result.graph is None:
        return
    for node in result.graph.nodes.values():
        binding, done = node.binding, node.step.done_when
        contract = done and [done.description, list(done.required_keys), list(done.checks)]
        content = [
            binding.tool.name if binding else None,
            binding.args_hash if binding else None,
            sorted(node.depends_on),
            sorted({tool.name for tool in node.allowed_tools}),
            contract,
        ]
        text = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        assert node.fingerprint == hashlib.sha256(text.encode()).hexdigest()


def generated(seed: int) -> dict[str, Any]:
    """A plan of every kind of step (tool calls of each side effect, values taken from
    earlier outputs, agent steps), with odd floats, loose contracts and approvals."""
    rnd = random.Random(seed)
    steps: list[dict[str, Any]] = []
    for index in range(rnd.choice([1, 3, 12, 40])):
        step_id = f"s{index}"
        earlier = [step["id"] for step in steps]
        step: dict[str, Any] = {
            "id": step_id,
            "description": rnd.choice(TEXTS) + f" {index}",
            "depends_on": earlier if index == 0 or rnd.random() < 0.2 else [earlier[-1]],
        }
        kind = rnd.randrange(8)
        if kind == 0:
            step["tools_allowed"] = rnd.sample(["echo", "http_request", "file_write"], 2)
        else:
            tool, args = [
                ("echo", {"label": rnd.choice(TEXTS), "value": rnd.choice(FLOATS)}),
                ("sleep", {"seconds": rnd.choice(FLOATS)}),
                ("noop", {}),
                ("file_write", {"path": f"out/{index}.txt", "content": rnd.choice(TEXTS)}),
                (
                    "http_request",
                    {"method": rnd.choice(["GET", "POST"]), "url": "https://api.example.com/x"},
                ),  # fmt: skip
                ("shell", {"argv": ["echo", rnd.choice(TEXTS)]}),
                ("echo", {"from": {"$from": earlier[-1] if earlier else step_id}}),
            ][kind - 1]
            step.update(tool=tool, args=args)
        if rnd.random() < 0.7:
            step["done_when"] = {"description": rnd.choice(TEXTS), "required_keys": ["label"]}
        if rnd.random() < 0.5:
            step["timeout_s"] = rnd.choice(AMOUNTS)
        if rnd.random() < 0.5:
            step["rollback_hint"] = rnd.choice(TEXTS)
        if rnd.random() < 0.8:
            estimate = {"tokens": rnd.randrange(100), "cost": rnd.choice(AMOUNTS)}
            if rnd.random() < 0.5:
                estimate["seconds"] = rnd.choice(AMOUNTS)
            step["estimate"] = estimate
        steps.append(step)
    return {"goal": "Write the report", "steps": steps, "deliverable": steps[-1]["id"]}


@pytest.mark.parametrize("path", PLANS, ids=lambda path: path.name)
def test_every_example_plan_is_written_as_the_standard_library_writes_it(path: Path):
    document = load_plan(path.read_text(), "json" if path.suffix == ".json" else "yaml")
    assert_written_as_the_standard_library_writes(compiled(document))


@pytest.mark.parametrize("seed", range(40))
def test_generated_plans_are_written_as_the_standard_library_writes_them(seed: int):
    result = compiled(from_data(generated(seed)))
    assert_written_as_the_standard_library_writes(result)


def test_the_generated_plans_reach_graphs_and_floats_msgspec_spells_its_own_way():
    texts = [compiled(from_data(generated(seed))).to_json() for seed in range(40)]
    assert sum('"ok": true' in text for text in texts) > 20
    assert any("e+16" in text or "e-05" in text for text in texts if '"ok": true' in text)


def test_a_result_with_a_value_only_python_writes_is_written_the_standard_way():
    document = next(plan for plan in map(from_data, map(generated, range(40))) if compiled(plan).ok)
    first = msgspec.structs.replace(document.steps[0], timeout_s=math.inf)  # no reader builds this
    result = compiled(replace(document, steps=(first, *document.steps[1:])))
    assert result.graph is not None
    assert result.graph.nodes[first.id].to_data()["timeout_s"] == math.inf
    assert_written_as_the_standard_library_writes(result)
