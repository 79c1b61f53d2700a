"""Budgets that hold and recovery that ends, with real worker processes on both
deployments: three workers racing over eight runs of agent steps without estimates
never spend past a token budget, and a step whose task crashes outside the runner fails
at once instead of being started again each time its lease expires."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .deployment import Deployment, wait_for

pytestmark = pytest.mark.slow

# Each run's steps are all ready at once, so the three workers race over every run's
# budget; eight runs of twelve race as surely as twenty of twenty, at a fifth of the steps.
RUNS = 8
STEPS = 12
BUDGET = 600  # room for half the steps at 100 tokens each


def _agent_plan() -> str:
    steps = "\n".join(
        f"  - {{id: s{i:02d}, description: Summarise supplier {i}'s deliveries,"
        f" tools_allowed: [echo]}}"
        for i in range(STEPS)
    )
    join = ", ".join(f"s{i:02d}" for i in range(STEPS))
    return (
        f"goal: Summarise every supplier\nbudget: {{max_tokens: {BUDGET}}}\nsteps:\n"
        f"{steps}\n"
        f"  - {{id: total, description: Add the summaries up, tool: noop, depends_on: [{join}]}}\n"
    )


def _started(kind: str, root: Path, workers: int, **env: str) -> Deployment:
    deployment = Deployment(kind, root, extra_env=env)
    deployment.start(workers=workers)
    return deployment


@pytest.fixture(scope="module")
def racing(deployment_kind: str, tmp_path_factory) -> Iterator[Deployment]:
    """Three workers whose model answers every agent step with 100 tokens; an agent step
    without an estimate reserves 100."""
    root = tmp_path_factory.mktemp(f"race-{deployment_kind}")
    replies = root / "replies.yaml"
    replies.write_text("- {content: '{\"ok\": true}', tokens: 100}\n" * (RUNS * STEPS))
    deployment = _started(
        deployment_kind,
        root,
        workers=3,
        FORGE_MODEL=f"scripted:{replies}",
        FORGE_AGENT_STEP_TOKENS="100",
        # Not about leases: the deployments' 2 s lease expired under a loaded machine's
        # heartbeats, and the retried step then counted as failed (a flaky 9 of 10).
        FORGE_STEP_LEASE_SECONDS="20",
    )
    try:
        yield deployment
    finally:
        deployment.stop()
        print(deployment.logs())


def test_three_workers_racing_over_eight_runs_never_spend_past_the_token_budget(racing):
    plan_id, number = racing.approved_plan("Supplier summaries", _agent_plan())
    run_ids = [racing.start_run(plan_id, number) for _ in range(RUNS)]

    finished = [racing.wait_status(run_id, "budget_exhausted", "succeeded", "failed",
                                   "needs_replan", timeout=180) for run_id in run_ids]  # fmt: skip
    wait_for(
        lambda: all(
            s["status"] != "running" for run_id in run_ids for s in racing.run(run_id)["steps"]
        ),
        timeout=60,
    )

    runs = [racing.run(run_id) for run_id in run_ids]
    assert [r["status"] for r in finished] == ["budget_exhausted"] * RUNS
    assert [r["budget"]["used_tokens"] for r in runs] == [BUDGET] * RUNS
    for run in runs:
        statuses = [s["status"] for s in run["steps"]]
        assert statuses.count("succeeded") == BUDGET // 100, statuses
        assert not {"ready", "pending", "running"} & set(statuses), statuses


@pytest.fixture(scope="module")
def crashing(deployment_kind: str, tmp_path_factory) -> Iterator[Deployment]:
    """Two workers whose model names a script file that does not exist: building it
    raises outside the runner's result handling."""
    root = tmp_path_factory.mktemp(f"crash-{deployment_kind}")
    deployment = _started(
        deployment_kind, root, workers=2, FORGE_MODEL=f"scripted:{root / 'missing.yaml'}"
    )
    try:
        yield deployment
    finally:
        deployment.stop()
        print(deployment.logs())


def test_a_step_whose_task_crashes_fails_at_once_and_is_never_started_again(crashing):
    plan = (
        "goal: Summarise a supplier\nsteps:\n"
        "  - {id: study, description: Summarise ACME's deliveries, tools_allowed: [echo]}\n"
    )
    plan_id, number = crashing.approved_plan("Crashing model", plan)
    run_id = crashing.start_run(plan_id, number)

    run = crashing.wait_status(run_id, "needs_replan", "failed", timeout=30)
    time.sleep(5)  # more than two leases: a step left running would have been retried

    [step] = crashing.run(run_id)["steps"]
    assert run["status"] == "needs_replan"
    assert (step["status"], step["attempt"]) == ("failed", 1)
    assert "missing.yaml" in step["error"]
