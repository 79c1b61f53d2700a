"""propose()'s progress callback and cancellation check (issue 25, item 5): a person who
waits for the planner sees which attempt it is on and why the last answer went back,
and can stop it between attempts; ``why_refused`` says, in words, why an answer went
back."""

from __future__ import annotations

import pytest

from forge.compiler import GraphCompiler
from forge.plan import from_data
from forge.planners import Observation, ScriptedPlanner
from forge.planners.proposals import Attempt, ProposalCancelled, propose
from forge.planners.refusals import why_refused
from forge.tools import BUILTIN_TOOLS, DEFAULT_POLICY, PolicyEngine, ToolRegistry

GOOD = {
    "goal": "Score the supplier risk",
    "steps": [
        {"id": "gather", "description": "Collect the contract facts", "tool": "echo"},
        {"id": "score", "description": "Score the risk from the facts", "tool": "echo",
         "depends_on": ["gather"]},
    ],
}  # fmt: skip
CYCLIC = {
    "goal": "Score the supplier risk",
    "steps": [
        {"id": "a", "description": "Collect the contract facts", "tool": "echo",
         "depends_on": ["b"]},
        {"id": "b", "description": "Score the risk from the facts", "tool": "echo",
         "depends_on": ["a"]},
    ],
}  # fmt: skip


def compile_with_builtins():
    compiler = GraphCompiler(ToolRegistry(BUILTIN_TOOLS), PolicyEngine(DEFAULT_POLICY))
    return compiler.compile


def scripted(*documents):
    return ScriptedPlanner([from_data(d) for d in documents])


def test_progress_is_told_before_each_attempt_with_the_attempts_so_far():
    seen: list[tuple[int, tuple[str, ...]]] = []

    proposal = propose(
        scripted(CYCLIC, CYCLIC, GOOD), "Score", Observation(), compile_with_builtins(),
        max_attempts=3,
        progress=lambda number, before: seen.append((number, tuple(a.code for a in before))),
    )  # fmt: skip

    assert proposal.ok
    assert seen == [
        (1, ()),
        (2, ("does_not_compile",)),
        (3, ("does_not_compile", "does_not_compile")),
    ]


def test_a_cancelled_proposal_stops_between_attempts_and_keeps_what_came_before():
    planner = scripted(CYCLIC, GOOD)
    asked: list[int] = []

    with pytest.raises(ProposalCancelled) as cancelled:
        propose(
            planner, "Score", Observation(), compile_with_builtins(), max_attempts=3,
            progress=lambda number, _: asked.append(number),
            cancelled=lambda: len(asked) >= 1,  # the person cancels during attempt 1
        )  # fmt: skip

    assert cancelled.value.code == "cancelled"
    assert [a.code for a in cancelled.value.attempts] == ["does_not_compile"]
    assert len(planner.observations) == 1  # attempt 2 was never asked


def test_a_proposal_cancelled_before_it_starts_asks_nothing():
    planner = scripted(GOOD)

    with pytest.raises(ProposalCancelled) as cancelled:
        propose(planner, "Score", Observation(), compile_with_builtins(), cancelled=lambda: True)

    assert cancelled.value.attempts == ()
    assert planner.observations == []


def _attempt(code: str, *diagnostics: str) -> dict:
    data = [{"code": c, "severity": "error", "message": c, "nodes": [], "edges": []}
            for c in diagnostics]  # fmt: skip
    data.append({"code": "vague_step", "severity": "warning", "message": "", "nodes": []})
    return Attempt(1, "", "", code, (), tuple(data)).to_data()


@pytest.mark.parametrize(
    ("attempt", "words"),
    [
        (_attempt("does_not_compile", "cycle"), "the last answer had a cycle"),
        (
            _attempt("does_not_compile", "unknown_tool", "cycle", "cycle"),
            "the last answer named a tool that does not exist, and 2 more problems",
        ),
        (_attempt("does_not_compile", "invalid_args"), "the last answer gave a tool "
         "arguments it does not take"),
        (_attempt("invalid_json"), "the last answer was not a plan document (invalid_json)"),
        (_attempt("does_not_compile", "some_future_code"), "the last answer did not compile "
         "(some_future_code)"),
    ],
)  # fmt: skip
def test_why_an_answer_went_back_is_said_in_words(attempt, words):
    assert why_refused(attempt) == words


def test_an_answer_that_compiled_was_not_refused():
    assert why_refused(_attempt("")) == ""
