"""A planner script (``scripted:FILE`` whose file holds ``answers``): the demo's planner
without a model or a key (issue 25, item 12). It answers any goal, picking the answer
whose words the goal holds, else its ``otherwise``; a refused answer is followed by the
entry's next plan; it never runs out, and says which goals it knows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from forge.compiler import GraphCompiler
from forge.errors import ForgeError
from forge.plan.formats.yaml_safe import parse_yaml
from forge.plan.limits import DEFAULT_LIMITS
from forge.planners import Observation
from forge.planners.config import planner_from_spec
from forge.planners.goal_script import GoalScriptPlanner
from forge.planners.port import Feedback
from forge.planners.proposals import propose
from forge.planners.refusals import why_refused
from forge.tools import BUILTIN_TOOLS, DEFAULT_POLICY, PolicyEngine, ToolRegistry

DEMO = Path(__file__).resolve().parents[3] / "examples" / "demo" / "planner.yaml"


def step(id_: str, *after: str, tool: str = "echo") -> dict:
    return {"id": id_, "description": f"Do {id_} for the report", "tool": tool,
            "depends_on": list(after)}  # fmt: skip


SCRIPT = {
    "answers": [
        {
            "example": "Draft the release notes",
            "words": ["release", "changelog"],
            "rationale": "Read the changelog, then write.",
            "plans": [
                {"goal": "x", "steps": [step("a", "b"), step("b", "a")]},
                {"goal": "x", "steps": [step("a"), step("b", "a")]},
            ],
        },
        {
            "example": "Score a supplier's risk",
            "words": ["supplier", "risk", "score"],
            "plans": [{"goal": "x", "steps": [step("score")]}],
        },
    ],
    "otherwise": {"rationale": "A general plan.", "plans": [{"goal": "x", "steps": [step("g")]}]},
}


def planner(script: dict = SCRIPT) -> GoalScriptPlanner:
    return GoalScriptPlanner.from_data(script, name="scripted:demo")


def test_a_goal_gets_the_answer_whose_words_it_holds_with_its_own_goal_and_rationale():
    answer = planner().plan("Score the risk of our supplier ACME\nContext: x", Observation())

    assert [s.id for s in answer.document.steps] == ["score"]
    assert answer.document.goal == "Score the risk of our supplier ACME"
    assert answer.planner == "scripted:demo"
    assert answer.told.startswith("Task: Score the risk")


def test_words_match_the_start_of_a_goals_words_whatever_their_case():
    answer = planner().plan("Publish the RELEASES of May from the changelogs", Observation())
    assert answer.rationale == "Read the changelog, then write."


def test_a_refused_answer_is_followed_by_the_entrys_next_plan_and_then_its_last():
    script = planner()
    refused = [Feedback(n, "", ("[cycle] ...",)) for n in (1, 2)]

    first = script.plan("Release notes", Observation())
    second = script.plan("Release notes", Observation(feedback=refused[0]))
    third = script.plan("Release notes", Observation(feedback=refused[1]))

    assert first.document.steps[0].depends_on == ("b",)
    assert second.document.steps[0].depends_on == ()
    assert third.document == second.document


def test_any_other_goal_gets_the_general_answer_and_the_script_never_runs_out():
    script = planner()
    answers = [script.plan(f"Plan the offsite number {n}", Observation()) for n in range(5)]
    assert {a.rationale for a in answers} == {"A general plan."}
    assert answers[-1].document.goal == "Plan the offsite number 4"


def test_it_says_which_goals_it_knows():
    assert planner().examples == ("Draft the release notes", "Score a supplier's risk")


def test_without_an_otherwise_an_unknown_goal_is_refused_naming_the_goals_it_knows():
    script = planner({"answers": SCRIPT["answers"]})
    with pytest.raises(ForgeError) as refused:
        script.plan("Plan the offsite", Observation())
    assert refused.value.code == "planner_exhausted"
    assert "Draft the release notes" in refused.value.message


def test_a_replan_is_not_what_a_script_answers():
    current = planner().plan("Release notes", Observation()).document
    with pytest.raises(ForgeError) as refused:
        planner().plan("Release notes", Observation(current=current, current_version=1))
    assert refused.value.code == "planner_exhausted"
    assert "replan" in refused.value.message


@pytest.mark.parametrize(
    "script",
    [
        {"answers": "all of them"},
        {"answers": [{"words": ["x"], "plans": []}]},
        {"answers": [{"words": [], "plans": [{"goal": "x", "steps": [step("a")]}]}]},
        {"answers": [{"words": ["x"], "plans": [{"goal": "x", "steps": "none"}]}]},
        {"answers": [], "otherwise": {"plans": [{"goal": "x"}]}, "extra": 1},
        {"answers": [], "think_seconds": -1},
    ],
)
def test_a_malformed_script_is_refused_with_a_code(script):
    with pytest.raises(ForgeError) as refused:
        planner(script)
    assert refused.value.code == "invalid_planner_script"


def test_scripted_spec_reads_a_script_file_and_still_reads_plan_files(tmp_path):
    (tmp_path / "script.json").write_text(json.dumps(SCRIPT))
    (tmp_path / "plan.json").write_text(json.dumps(SCRIPT["otherwise"]["plans"][0]))

    script = planner_from_spec(f"scripted:{tmp_path / 'script.json'}")
    plain = planner_from_spec(f"scripted:{tmp_path / 'plan.json'}")

    assert isinstance(script, GoalScriptPlanner)
    assert script.name == f"scripted:{tmp_path / 'script.json'}"
    assert not isinstance(plain, GoalScriptPlanner)


# --- The demo's script (make run's FORGE_PLANNER) ---------------------------------------


def compile_with_builtins():
    return GraphCompiler(ToolRegistry(BUILTIN_TOOLS), PolicyEngine(DEFAULT_POLICY)).compile


def demo() -> GoalScriptPlanner:
    data = parse_yaml(DEMO.read_text(), DEFAULT_LIMITS)
    assert isinstance(data, dict)
    return GoalScriptPlanner.from_data({**data, "think_seconds": 0}, name="scripted:demo")


def test_the_demo_script_answers_every_goal_it_knows_and_any_other_with_a_plan_that_compiles():
    script = demo()
    assert len(script.examples) >= 3
    for goal in [*script.examples, "Plan the team offsite in June"]:
        proposal = propose(script, goal, Observation(), compile_with_builtins(), max_attempts=3)
        assert proposal.ok, (goal, [a.problems for a in proposal.attempts])
        assert proposal.plan is not None and proposal.plan.rationale
        errors = [d for d in proposal.compiled.diagnostics if d.severity != "info"]  # type: ignore[union-attr]
        assert errors == [], (goal, errors)


def test_the_demo_shows_a_retry_its_first_release_notes_answer_has_a_cycle():
    said: list[str] = []
    proposal = propose(
        demo(), "Draft the release notes for 2.5", Observation(), compile_with_builtins(),
        progress=lambda n, before: said.append(why_refused(before[-1].to_data()) if before else ""),
    )  # fmt: skip
    assert proposal.ok
    assert said == ["", "the last answer had a cycle"]
