"""``forge run --model`` and ``--planner llm:``, run as a user runs them, against a
scripted model or a real local HTTP server speaking chat completions."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from ..models.openai_fake import FakeOpenAI, running

REPO = Path(__file__).resolve().parents[3]
SEED = "examples/agent-step-in-chinese.json"


def forge(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {
        k: v for k, v in os.environ.items() if not k.startswith(("DJANGO", "OPENAI", "FORGE_MODEL"))
    }
    return subprocess.run(
        [sys.executable, "-m", "forge.cli", *args],
        capture_output=True, text=True, env={**clean, **env}, cwd=REPO, timeout=120,
    )  # fmt: skip


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    with running() as server:
        yield server


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    with sqlite3.connect(root / "data.sqlite") as connection:
        connection.execute("create table contracts (supplier text, penalty real)")
        connection.execute("insert into contracts values ('ACME', 0.05)")
    connection.close()
    return root


def test_a_scripted_model_runs_the_seeds_agent_step(tmp_path, workspace):
    script = tmp_path / "replies.yaml"
    script.write_text(
        "- tool_calls: [{name: sql_read, arguments: {query: select * from contracts}}]\n"
        "  tokens: 50\n"
        "- content: {facts: [ACME pays a 5% penalty]}\n"
        "  tokens: 25\n"
    )

    result = forge(
        "run",
        "--approve-as",
        "carol",
        SEED,
        "--model",
        f"scripted:{script}",
        "--workspace",
        str(workspace),
    )

    assert result.returncode == 0, result.stdout + result.stderr
    assert "run succeeded: 1 step(s), 75 tokens" in result.stdout


def test_an_openai_model_gets_the_key_from_the_environment_only(fake_openai, workspace):
    fake_openai.reply(None, [("sql_read", {"query": "select supplier from contracts"})], tokens=10)
    fake_openai.reply('{"facts": ["ACME"]}', tokens=5)

    result = forge(
        "run", "--approve-as", "carol", SEED, "--model", "openai:fake-model",
        "--base-url", fake_openai.base_url,
        "--workspace", str(workspace), FORGE_MODEL_API_KEY="sk-from-env",
    )  # fmt: skip

    assert result.returncode == 0, result.stdout + result.stderr
    assert "run succeeded: 1 step(s), 15 tokens" in result.stdout
    assert [h["Authorization"] for h in fake_openai.headers] == ["Bearer sk-from-env"] * 2
    assert fake_openai.requests[0]["model"] == "fake-model"


def test_without_a_model_an_agent_step_fails_and_the_run_needs_a_replan(workspace):
    result = forge("run", "--approve-as", "carol", SEED, "--workspace", str(workspace))

    assert result.returncode == 3
    assert "is an agent step and no model is configured" in result.stdout


FAILING = """
goal: Score the supplier risk
steps:
  - {id: gather, description: Collect the contract facts, tool: echo, args: {facts: [late]}}
  - id: score
    description: Score the risk from the facts
    depends_on: [gather]
    tool: echo
    args: {risk: 42}
    done_when: {checks: ["risk <= `10`"]}
"""


def test_an_llm_planner_replans_with_the_same_endpoint(fake_openai, tmp_path):
    plan = tmp_path / "plan.yaml"
    plan.write_text(FAILING)
    fixed = FAILING.replace("risk: 42", "risk: 3")
    fake_openai.reply(json.dumps(yaml.safe_load(fixed)), tokens=300)

    result = forge(
        "run", "--approve-as", "carol", str(plan), "--planner", "llm:fake-model",
        "--base-url", fake_openai.base_url,
        "--workspace", str(tmp_path / "ws"),
    )  # fmt: skip

    assert result.returncode == 0, result.stdout + result.stderr
    assert "run succeeded (v2)" in result.stdout
    assert "Failed step: score" in fake_openai.messages()[1]["content"]


def test_an_llm_planner_with_an_invalid_answer_stops_the_run_for_a_replan(fake_openai, tmp_path):
    plan = tmp_path / "plan.yaml"
    plan.write_text(FAILING)
    fake_openai.reply("I would rather not plan today.")

    result = forge(
        "run", "--approve-as", "carol", str(plan), "--planner", "llm:fake-model",
        "--base-url", fake_openai.base_url,
        "--workspace", str(tmp_path / "ws"),
    )  # fmt: skip

    assert result.returncode == 3
    assert "replan stopped: the model's answer is not a valid plan document" in result.stdout
    assert "[invalid_plan_output]" in result.stdout


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--model", "gpt-4o"], "openai:MODEL or scripted:FILE"),
        (["--model", "scripted:/nonexistent/replies.yaml"], "cannot read model script"),
        (["--planner", "oracle:delphi"], "openai:MODEL (llm:MODEL) or scripted:FILE[,FILE...]"),
        (["--planner", "scripted:/nonexistent/v2.yaml"], "[planner_file_unreadable]"),
    ],
)
def test_a_model_or_planner_that_cannot_be_set_up_exits_2(flags, message, tmp_path):
    result = forge(
        "run", "--approve-as", "carol", SEED, *flags, "--workspace", str(tmp_path / "ws")
    )

    assert result.returncode == 2
    assert message in result.stderr
