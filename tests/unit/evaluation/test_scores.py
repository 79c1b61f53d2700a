"""The five scores, each shown passing and failing: cases run through the real
compiler, gate and LocalRun with scripted planners and tools, and traces made by hand
where the executor itself would never stray."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

from forge.evaluation import (
    EVALUATOR,
    evaluate,
    load_suite,
    planner_from_spec,
    read_suite,
    run_case,
    score_case,
)
from forge.evaluation.scores import fidelity, replan_quality, success, validity
from forge.models import ModelError
from forge.plan import from_data
from forge.planners import ScriptedPlanner

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "eval"

SUITE = load_suite("""\
schema: forge.eval/v1
name: unit
max_attempts: 2
tools:
  - {name: crm.note, description: Add a note to the CRM, permission_scope: crm,
     side_effect: write, idempotent: false}
policy:
  allow: {compute: ["*"], file_read: ["*"], file_write: ["*"], crm: ["*"]}
cases:
  - id: echo
    scenario: normal_completion
    goal: Echo hello
    expect: {must_call: [{tool: echo, args: {text: hello}}], must_not_call: [{tool: noop}]}
  - id: flaky
    scenario: tool_failure
    goal: Read a.txt, note it in the CRM, then read b.txt
    outcomes:
      - {tool: file_read, args: {path: a.txt}, results: [{ok: {path: a.txt, content: A}}]}
      - {tool: crm.note, results: [{ok: {}}]}
      - {tool: file_read, args: {path: b.txt}, results: [{fail: disk on fire, code: io_error}]}
      - {tool: file_read, args: {path: c.txt}, results: [{ok: {path: c.txt, content: C}}]}
""")


def plan(*steps, **fields):
    data = {"goal": "unit", **fields, "steps": []}
    for step in steps:
        data["steps"].append({"description": f"Carry out step {step['id']} of the job", **step})
    return from_data(data)


ECHO = plan(
    {
        "id": "say",
        "tool": "echo",
        "args": {"text": "hello"},
        "done_when": {"required_keys": ["text"]},
    }
)
BROKEN = plan({"id": "say", "tool": "shout", "args": {}})


def scripted(*documents):
    return lambda case, tools: ScriptedPlanner(documents, name="scripted:unit")


def run(case_id, *documents, suite=SUITE):
    case = suite.case(case_id)
    trace = run_case(suite, case, scripted(*documents))
    return case, trace


# --- validity ---------------------------------------------------------------------------


def test_validity_is_one_when_the_first_answer_compiles():
    _, trace = run("echo", ECHO)

    score = validity(trace)
    assert (score.passed, score.value, score.detail) == (True, 1.0, "compiled on the first answer")


def test_validity_counts_the_answers_the_compiler_refused_first():
    _, trace = run("echo", BROKEN, ECHO)

    score = validity(trace)
    assert (score.passed, score.value) == (True, 0.5)
    assert score.problems == ("unknown_tool: step 'say' uses unknown tool 'shout'",)


def test_validity_fails_when_no_answer_compiles_within_the_bound():
    case, trace = run("echo", BROKEN, BROKEN, ECHO)  # max_attempts: 2

    score = validity(trace)
    assert (score.passed, score.value) == (False, 0.0)
    assert len(trace.first) == 2 and trace.status == "not_compiled"
    assert trace.calls == ()
    assert success(case, trace).passed is False


def test_a_refused_answer_goes_back_to_the_planner_as_feedback_as_in_production():
    planner = ScriptedPlanner([BROKEN, ECHO])

    trace = run_case(SUITE, SUITE.case("echo"), lambda c, tools: planner)

    first, second = planner.observations
    assert first.feedback is None
    assert second.feedback is not None and second.feedback.attempt == 1
    # forge.planners.proposals' wording, the one the web and the workers use
    assert second.feedback.problems == (
        "[unknown_tool] step 'say' uses unknown tool 'shout' (steps say)",
    )
    assert [p.compiled for p in trace.first] == [False, True]


def test_a_planner_that_runs_out_of_answers_ends_the_attempts_with_its_error():
    _, trace = run("echo", BROKEN)  # max_attempts: 2, one answer

    assert [(p.attempt, p.compiled) for p in trace.first] == [(1, False), (2, False)]
    assert trace.first[1].errors == (
        "planner_exhausted: the scripted planner has no plan left after 1",
    )
    assert trace.status == "not_compiled" and validity(trace).value == 0.0


def test_a_planner_that_fails_to_answer_is_not_asked_again_as_in_production():
    class Timeout(ScriptedPlanner):
        def plan(self, task, observation):
            if not self.observations:
                self.observations.append(observation)
                raise ModelError("the model did not answer in 60 s", code="model_timeout")
            return super().plan(task, observation)

    planner = Timeout([ECHO])

    trace = run_case(SUITE, SUITE.case("echo"), lambda c, tools: planner)

    assert [p.errors for p in trace.first] == [
        ("model_timeout: the model did not answer in 60 s",),
    ]
    assert trace.status == "not_compiled" and len(planner.observations) == 1


def test_each_answer_is_timed_and_charged_what_its_metered_model_used():
    ticks = iter(range(0, 1000, 2))  # each reading of the clock is 2 s later

    class Metered(ScriptedPlanner):
        def __init__(self, documents):
            super().__init__(documents)
            self.model = SimpleNamespace(tokens=0, cost=0.0)

        def plan(self, task, observation):
            self.model.tokens += 7
            self.model.cost += 0.5
            return super().plan(task, observation)

    trace = run_case(SUITE, SUITE.case("echo"), lambda c, tools: Metered([BROKEN, ECHO]),
                     clock=lambda: float(next(ticks)))  # fmt: skip

    assert [(p.tokens, p.cost, p.latency_ms) for p in trace.first] == [
        (7, 0.5, 2000.0), (7, 0.5, 2000.0),
    ]  # fmt: skip
    assert trace.planner_tokens == 14


# --- the gate -----------------------------------------------------------------------------


def test_the_evaluator_approves_the_planners_versions_and_steps_never_the_planner():
    suite = read_suite(EXAMPLES / "seed-003.yaml")
    case = suite.case("permission-refusal")
    planner = planner_from_spec(f"scripted:{EXAMPLES / 'seed-003.answers.yaml'}", suite)

    trace = run_case(suite, case, planner.factory)

    starts = [e for e in trace.events if e.event_type in ("run_started", "run_resumed")]
    approvals = [e.facts["approval"] for e in starts]
    assert [(a["author"], a["approver"], a["by_policy"]) for a in approvals] == [
        ("scripted:seed-003.answers.yaml", EVALUATOR, False),
    ] * 2
    steps = [(e.step_id, e.actor) for e in trace.events if e.event_type == "step_approved"]
    assert steps == [("record", EVALUATOR), ("record", EVALUATOR)]  # the ERP call, the draft


def test_a_planner_named_as_the_evaluator_cannot_have_its_plan_approved_and_nothing_runs():
    case = SUITE.case("echo")

    trace = run_case(SUITE, case, lambda c, tools: ScriptedPlanner([ECHO], name=EVALUATOR))

    assert trace.status == "not_approved"
    assert "cannot approve it: another person must" in trace.stop_reason
    assert trace.calls == () and trace.events == ()


# --- fidelity -----------------------------------------------------------------------------


def test_fidelity_holds_for_a_real_run():
    _, trace = run("echo", ECHO)

    score = fidelity(trace)
    assert (score.passed, score.value, score.detail) == (True, 1.0, "1 of 1 call(s) as planned")


def test_fidelity_fails_for_a_call_no_step_started():
    _, trace = run("echo", ECHO)
    stray = replace(trace.calls[0], step_id="ghost", tool="shell")

    score = fidelity(replace(trace, calls=(*trace.calls, stray)))

    assert (score.passed, score.value) == (False, 0.5)
    assert score.problems == (
        "unplanned call of 'shell' by step 'ghost': the step had not started (or had made "
        "its call)",
    )


def test_fidelity_fails_for_a_call_with_other_arguments_than_planned():
    _, trace = run("echo", ECHO)
    other = replace(trace.calls[0], args={"text": "bye"}, args_hash="0" * 64)

    score = fidelity(replace(trace, calls=(other,)))

    assert score.passed is False
    assert score.problems == ("call of 'echo' by step 'say' is not the call version 1 planned",)


def test_fidelity_fails_for_a_step_started_before_its_dependency_succeeded():
    two = plan(
        {"id": "first", "tool": "echo", "args": {"n": 1}},
        {"id": "second", "tool": "echo", "args": {"n": 2}, "depends_on": ["first"]},
    )
    _, trace = run("echo", two)
    started = [e for e in trace.events if e.event_type == "step_started"]
    early = replace(started[1], seq=0)
    events = list(trace.events)
    events.insert(events.index(started[0]), early)  # second starts before first
    calls = tuple(replace(c, after_event=c.after_event + 1) for c in trace.calls)

    score = fidelity(replace(trace, events=tuple(events), calls=calls))

    assert score.passed is False
    assert "step 'second' started before first succeeded" in score.problems


# --- replan quality ---------------------------------------------------------------------

A, NOTE = {"path": "a.txt"}, {"text": "a.txt was read"}
V1 = plan(
    {"id": "a", "tool": "file_read", "args": A},
    {"id": "note", "tool": "crm.note", "args": NOTE, "depends_on": ["a"]},
    {"id": "b", "tool": "file_read", "args": {"path": "b.txt"}, "depends_on": ["note"]},
)


def test_a_replan_that_routes_around_the_failure_and_keeps_the_work_passes():
    fixed = plan(
        {"id": "a", "tool": "file_read", "args": A},
        {"id": "note", "tool": "crm.note", "args": NOTE, "depends_on": ["a"]},
        {"id": "b", "tool": "file_read", "args": {"path": "c.txt"}, "depends_on": ["note"]},
    )
    case, trace = run("flaky", V1, fixed)

    score = replan_quality(trace)
    assert (score.passed, score.value) == (True, 1.0)
    assert trace.replans[0].preserved == ("a", "note")
    assert success(case, trace).passed is True


def test_a_replan_that_makes_the_failed_call_again_does_not_fix_the_failure():
    case, trace = run("flaky", V1, V1)

    score = replan_quality(trace)
    assert score.passed is False
    assert "version 2: the failed call failed again (b)" in score.problems


def test_a_replan_that_redoes_a_performed_side_effect_fails():
    # note's done_when changes, so it is not preserved: the CRM gets the same note twice
    redone = plan(
        {"id": "a", "tool": "file_read", "args": A},
        {"id": "note", "tool": "crm.note", "args": NOTE, "depends_on": ["a"],
         "done_when": {"description": "noted"}},
        {"id": "b", "tool": "file_read", "args": {"path": "c.txt"}, "depends_on": ["note"]},
    )  # fmt: skip
    case, trace = run("flaky", V1, redone)

    score = replan_quality(trace)
    assert score.passed is False
    assert "version 2: completed step(s) not preserved: note" in score.problems
    [repeat] = [p for p in score.problems if "repeats a side effect" in p]
    assert "would repeat the write side effect of 'crm.note'" in repeat
    assert [c.step_id for c in trace.calls if c.tool == "crm.note"] == ["note", "note"]


def test_a_replan_that_drops_a_constraint_stops_the_run_and_fails():
    drifted = plan({"id": "b", "tool": "file_read", "args": {"path": "c.txt"}})
    case, trace = run("flaky", V1, drifted)

    score = replan_quality(trace)
    assert score.passed is False
    assert score.problems[0].startswith("version 2: dropped constraints: step 'a'")
    assert trace.status == "needs_replan" and "plan drift" in trace.stop_reason


def test_replan_quality_does_not_apply_without_a_replan():
    _, trace = run("echo", ECHO)

    assert replan_quality(trace).passed is None


# --- success and cost -----------------------------------------------------------------


def test_success_fails_for_a_call_that_must_not_happen_and_one_that_must():
    noisy = plan(
        {"id": "ping", "tool": "noop", "args": {}},
        {"id": "say", "tool": "echo", "args": {"text": "hi"}, "depends_on": ["ping"]},
    )
    case, trace = run("echo", noisy)

    score = success(case, trace)
    assert trace.status == "succeeded" and score.passed is False
    assert score.problems == (
        "no successful call like {'tool': 'echo', 'args': {'text': 'hello'}}",
        "a call like {'tool': 'noop'} was made",
    )


def test_cost_fails_over_the_cases_bounds():
    case, trace = run("echo", ECHO)
    tight = replace(case, expect=replace(case.expect, max_seconds=1e-9, max_tokens=0))

    score = score_case(tight, replace(trace, run_tokens=5))[4]

    assert score.metric == "cost" and score.passed is False
    assert score.problems[0] == "5 tokens, over 0"
    assert score.problems[1].endswith("s, over 1e-09 s")


def test_the_weaker_planner_loses_on_replans_and_success():
    suite = read_suite(EXAMPLES / "seed-003.yaml")
    good = planner_from_spec(f"scripted:{EXAMPLES / 'seed-003.answers.yaml'}", suite)
    weak = planner_from_spec(f"scripted:{EXAMPLES / 'seed-003.weak-answers.yaml'}", suite)

    strong_report = evaluate(suite, good.name, good.factory)
    weak_report = evaluate(suite, weak.name, weak.factory)

    assert strong_report.all_passed and not weak_report.all_passed
    assert strong_report.summary()["succeeded"] == 5
    assert weak_report.summary()["succeeded"] == 2
    # 0.5 (tool failure), 0.2 (drift), 0.8 (re-read), 0.5 (the ERP asked again)
    assert weak_report.summary()["metrics"]["replan"] == {"passed": 0, "applicable": 4,
                                                          "mean": 0.5}  # fmt: skip
