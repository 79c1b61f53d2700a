"""Per-step orchestration overhead of a local run, against a bare graphlib loop.

Both sides call the same noop runner for every step; the bare side orders the steps
with ``graphlib.TopologicalSorter`` and nothing else, while Forge compiles the plan and
runs it through the Scheduler and the ToolExecutor (schema, policy, record, events).
The difference divided by the number of steps is Forge's overhead per step. Medians of
several runs, measured in this process; the goal is under 1 ms per noop step, and the
same per-step cost at 1,000 steps as at 100 (the total grows linearly).

Run: ``.venv/bin/python -m bench.overhead``
"""

from __future__ import annotations

import graphlib
import tempfile
from pathlib import Path

from bench.common import median_seconds, print_table
from forge.compiler import GraphCompiler
from forge.plan import PlanDocument, from_data
from forge.runners.base import RunContext
from forge.runners.basic import BASIC_TOOLS, BasicRunner
from forge.runtime import ApprovalSigner, InMemoryRecordStore, ToolExecutor
from forge.runtime.local import LocalRun
from forge.tools import DEFAULT_POLICY, PolicyEngine, builtin_registry

GOAL_MS = 1.0


def chain(n: int) -> dict[str, list[str]]:
    return {f"s{i}": [f"s{i - 1}"] if i else [] for i in range(n)}


def fan_out(n: int) -> dict[str, list[str]]:
    middle = [f"s{i}" for i in range(1, n - 1)]
    return {"s0": [], **{sid: ["s0"] for sid in middle}, f"s{n - 1}": middle}


def document(dependencies: dict[str, list[str]]) -> PlanDocument:
    steps = [
        {
            "id": sid,
            "description": f"Produce output {sid} from its inputs",
            "tool": "noop",
            "depends_on": deps,
        }
        for sid, deps in dependencies.items()
    ]
    return from_data({"goal": "Measure orchestration overhead", "steps": steps})


def main() -> None:
    registry = builtin_registry()
    policy = PolicyEngine(DEFAULT_POLICY)
    runner = BasicRunner()
    signer = ApprovalSigner(b"bench-approval-key-0123456789")
    noop = registry.get("noop")
    workspace = Path(tempfile.mkdtemp(prefix="forge-bench-"))
    context = RunContext(run_id="bench", step_id="s", workspace=workspace, timeout_s=60)

    def bare(dependencies: dict[str, list[str]]) -> None:
        sorter = graphlib.TopologicalSorter(dependencies)
        sorter.prepare()
        while sorter.is_active():
            for node in sorter.get_ready():
                runner.run(noop, {}, context)
                sorter.done(node)

    def forge_run(plan: PlanDocument) -> None:
        executor = ToolExecutor(
            registry, policy, InMemoryRecordStore(), dict.fromkeys(BASIC_TOOLS, runner),
            approvals=signer,
        )  # fmt: skip
        compiler = GraphCompiler(registry, policy)
        result = LocalRun(compiler, executor, workspace, approver="bench").run(plan)
        assert result.status == "succeeded", result.status

    rows = []
    per_step: dict[str, list[float]] = {}
    for shape, build in (("chain", chain), ("fan-out", fan_out)):
        for n in (100, 1000):
            dependencies = build(n)
            plan = document(dependencies)
            repeat = 15 if n == 100 else 5
            bare_s = median_seconds(lambda d=dependencies: bare(d), repeat=repeat)
            forge_s = median_seconds(lambda p=plan: forge_run(p), repeat=repeat)
            overhead_ms = (forge_s - bare_s) / n * 1000
            per_step.setdefault(shape, []).append(overhead_ms)
            rows.append(
                [
                    shape,
                    n,
                    f"{bare_s * 1000:.2f}",
                    f"{forge_s * 1000:.1f}",
                    f"{overhead_ms:.3f}",
                    f"{forge_s / bare_s:.0f}x",
                ]
            )
    print("Local run overhead per noop step (medians)")
    print_table(["shape", "steps", "graphlib ms", "forge ms", "overhead ms/step", "ratio"], rows)
    print()
    for shape, (small, large) in per_step.items():
        growth = large / small
        verdict = "linear" if growth < 1.5 else "super-linear"
        print(f"{shape}: per-step overhead at 1,000 steps is {growth:.2f}x that at 100 ({verdict})")
    worst = max(max(values) for values in per_step.values())
    print(
        f"goal: under {GOAL_MS} ms per step -> worst {worst:.3f} ms: "
        f"{'met' if worst < GOAL_MS else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
