"""The seed's agent step end to end against an OpenAI-compatible endpoint (a real local
HTTP server): its tools run for real on a workspace with contracts and a SQLite file."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from forge.models import OpenAICompatibleModel
from forge.plan import load_plan

SEED = Path(__file__).resolve().parents[3] / "examples" / "agent-step-in-chinese.json"


@pytest.fixture
def supplier_workspace(harness):
    with sqlite3.connect(harness.workspace / "data.sqlite") as connection:
        connection.executescript(
            "create table contracts (supplier text, penalty real);"
            "insert into contracts values ('ACME', 0.05), ('Northwind', 0.0);"
        )
    connection.close()
    (harness.workspace / "contracts").mkdir()
    (harness.workspace / "contracts" / "acme.md").write_text("ACME\nlate penalty: 5%\n")
    return harness.workspace


def test_the_seed_agent_step_reads_the_database_and_files_through_the_executor(
    harness, supplier_workspace, fake_openai
):
    fake_openai.reply(
        None,
        [
            ("sql_read", {"query": "select supplier, penalty from contracts order by 1"}),
            ("file_search", {"pattern": "penalty"}),
        ],
        tokens=120,
    )
    fake_openai.reply(json.dumps({"facts": ["ACME: 5% late penalty"]}), tokens=80)
    model = OpenAICompatibleModel(fake_openai.base_url, "fake-model", "sk-test")

    result = harness.run(load_plan(SEED.read_bytes(), "json"), model)

    assert result.status == "succeeded", result.state.steps["s1"].error
    assert result.state.steps["s1"].output == {"facts": ["ACME: 5% late penalty"]}
    assert [(r.tool, r.status) for r in harness.records.records] == [
        ("sql_read", "succeeded"),
        ("file_search", "succeeded"),
    ]
    offered = [tool["function"]["name"] for tool in fake_openai.requests[0]["tools"]]
    assert offered == ["file_search", "sql_read"]
    sql_answer, search_answer = fake_openai.messages()[-2:]
    assert sql_answer["tool_call_id"] == "call_0"
    assert json.loads(sql_answer["content"])["output"]["rows"] == [
        ["ACME", 0.05],
        ["Northwind", 0.0],
    ]
    assert json.loads(search_answer["content"])["output"]["matches"] == [
        {"path": "contracts/acme.md", "line": 2, "text": "late penalty: 5%"}
    ]
    assert result.state.used_tokens == 200
    [finished] = [e for e in result.events if e.event_type == "step_succeeded"]
    assert finished.model == "fake-model"


def test_over_http_a_tool_outside_the_step_is_refused_and_never_runs(
    harness, supplier_workspace, fake_openai
):
    fake_openai.reply(None, [("file_write", {"path": "contracts/acme.md", "content": "gone"})])
    fake_openai.reply(json.dumps({"facts": ["unchanged"]}))
    model = OpenAICompatibleModel(fake_openai.base_url, "fake-model")

    result = harness.run(load_plan(SEED.read_bytes(), "json"), model)

    assert result.status == "succeeded"
    assert (supplier_workspace / "contracts" / "acme.md").read_text() == "ACME\nlate penalty: 5%\n"
    assert harness.executor.calls == 0
    assert json.loads(fake_openai.messages()[-1]["content"])["code"] == "tool_not_allowed"


def test_an_endpoint_error_fails_the_agent_step_with_its_code(harness, fake_openai):
    fake_openai.respond(503, {"error": {"message": "overloaded"}})
    model = OpenAICompatibleModel(fake_openai.base_url, "fake-model")

    result = harness.run(load_plan(SEED.read_bytes(), "json"), model)

    step = result.state.steps["s1"]
    assert step.status == "failed"
    assert step.error.endswith("answered 503: overloaded")
    assert result.status == "needs_replan"
