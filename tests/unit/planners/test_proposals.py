"""propose(): ask a planner until its plan compiles, a bounded number of times, keeping
every attempt; planner_from_spec(): the specs FORGE_PLANNER and forge run --planner take."""

from __future__ import annotations

import json

import pytest

from forge.compiler import GraphCompiler
from forge.models import OpenAICompatibleModel
from forge.models.config import Endpoint
from forge.plan import from_data
from forge.planners import LLMPlanner, Observation, ScriptedPlanner
from forge.planners.config import PlannerSpecError, planner_from_spec
from forge.planners.proposals import PlannerFailed, propose
from forge.tools import BUILTIN_TOOLS, DEFAULT_POLICY, PolicyEngine, ToolRegistry

GOOD = {
    "goal": "Score the supplier risk",
    "rationale": "Collect the facts first, then score them.",
    "steps": [
        {"id": "gather", "description": "Collect the contract facts", "tool": "echo",
         "args": {"facts": ["late"]}},
        {"id": "score", "description": "Score the risk from the facts", "tool": "echo",
         "args": {"risk": 3}, "depends_on": ["gather"]},
    ],
}  # fmt: skip
CYCLIC = {
    "goal": "Score the supplier risk",
    "steps": [
        {"id": "a", "description": "Collect the contract facts", "tool": "echo",
         "depends_on": ["b"]},
        {"id": "b", "description": "Score the risk from the facts", "tool": "teleport",
         "depends_on": ["a"]},
    ],
}  # fmt: skip


def compile_with_builtins():
    compiler = GraphCompiler(ToolRegistry(BUILTIN_TOOLS), PolicyEngine(DEFAULT_POLICY))
    return lambda document: compiler.compile(document)


def planner(server) -> LLMPlanner:
    return LLMPlanner(OpenAICompatibleModel(server.base_url, "fake-model"), tools=BUILTIN_TOOLS)


def test_a_plan_that_compiles_at_once_takes_one_attempt_with_its_rationale(fake_openai):
    fake_openai.reply(json.dumps(GOOD), tokens=700)

    proposal = propose(planner(fake_openai), "Score the supplier risk", Observation(),
                       compile_with_builtins())  # fmt: skip

    assert proposal.ok and proposal.code == ""
    assert [a.code for a in proposal.attempts] == [""]
    assert proposal.plan is not None
    assert proposal.plan.rationale == "Collect the facts first, then score them."
    assert (proposal.tokens, proposal.model) == (700, "fake-model")
    assert proposal.attempts[0].told.startswith("Task: Score the supplier risk")


def test_output_that_does_not_compile_goes_back_with_its_diagnostics(fake_openai):
    fake_openai.reply(json.dumps(CYCLIC), tokens=100)
    fake_openai.reply("not json at all", tokens=50)
    fake_openai.reply(json.dumps(GOOD), tokens=100)

    proposal = propose(planner(fake_openai), "Score the supplier risk", Observation(),
                       compile_with_builtins(), max_attempts=3)  # fmt: skip

    assert proposal.ok
    assert [a.code for a in proposal.attempts] == ["does_not_compile", "invalid_json", ""]
    assert proposal.tokens == 250
    second = fake_openai.messages(1)[1]["content"]
    assert "Your answer 1 was refused" in second
    assert "[cycle]" in second and "[unknown_tool]" in second
    third = fake_openai.messages(2)[1]["content"]
    assert "Your answer 2 was refused" in third and "not json at all" in third


def test_after_the_bound_the_last_attempt_and_every_reason_are_kept(fake_openai):
    for _ in range(2):
        fake_openai.reply(json.dumps(CYCLIC))

    proposal = propose(planner(fake_openai), "Score the supplier risk", Observation(),
                       compile_with_builtins(), max_attempts=2)  # fmt: skip

    assert not proposal.ok and proposal.code == "does_not_compile"
    assert len(fake_openai.requests) == 2
    assert proposal.plan is not None and proposal.plan.document == from_data(CYCLIC)
    codes = [{d["code"] for d in a.diagnostics} for a in proposal.attempts]
    assert all({"cycle", "unknown_tool"} <= found for found in codes)


def test_an_unreachable_planner_fails_with_its_code_and_keeps_what_came_before(fake_openai):
    fake_openai.reply(json.dumps(CYCLIC))
    fake_openai.respond(503, {"error": {"message": "overloaded"}})

    with pytest.raises(PlannerFailed) as failed:
        propose(planner(fake_openai), "Score", Observation(), compile_with_builtins())

    assert failed.value.code == "model_http_error"
    assert [a.code for a in failed.value.attempts] == ["does_not_compile"]


def test_a_scripted_planner_out_of_plans_fails_as_exhausted():
    with pytest.raises(PlannerFailed) as failed:
        propose(ScriptedPlanner([]), "Score", Observation(), compile_with_builtins())
    assert failed.value.code == "planner_exhausted"


def test_planner_specs_name_openai_llm_and_scripted_planners(tmp_path):
    plain = {key: value for key, value in GOOD.items() if key != "rationale"}
    (tmp_path / "v1.json").write_text(json.dumps(plain))
    endpoint = Endpoint("http://127.0.0.1:9/v1")

    assert planner_from_spec("openai:gpt-x", endpoint).name == "llm:gpt-x"
    assert planner_from_spec("llm:gpt-x", endpoint).name == "llm:gpt-x"
    scripted = planner_from_spec(f"scripted:{tmp_path / 'v1.json'}")
    assert isinstance(scripted, ScriptedPlanner)
    assert scripted.plan("Score", Observation()).document.goal == "Score the supplier risk"


@pytest.mark.parametrize(
    ("spec", "code"),
    [("oracle:delphi", "invalid_planner_spec"), ("openai:", "invalid_planner_spec"),
     ("scripted:/nonexistent/plan.yaml", "planner_file_unreadable")],
)  # fmt: skip
def test_a_planner_spec_that_names_nothing_usable_is_refused_with_a_code(spec, code):
    with pytest.raises(PlannerSpecError) as refused:
        planner_from_spec(spec)
    assert refused.value.code == code
