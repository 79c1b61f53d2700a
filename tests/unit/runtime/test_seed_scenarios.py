"""Seed 003's five scenarios, run locally with the real compiler, scheduler and executor:
normal completion, tool failure, replan, the user changing the requirement mid-run, and
a permission refusal."""

from forge.compiler import GraphCompiler
from forge.planners import ScriptedPlanner
from forge.runtime import Scheduler, approval_hash
from forge.runtime.local import LocalRun
from forge.tools import DEFAULT_POLICY, Policy, PolicyEngine, builtin_registry

from .conftest import GATE, SIGNER, approved, compile_graph, plan


def _compiler(policy=DEFAULT_POLICY):
    return GraphCompiler(builtin_registry(), PolicyEngine(policy))


def _report_plan(summary_args):
    return plan(
        {"id": "inspect", "tool": "echo", "args": {"facts": ["contract A", "contract B"]},
         "done_when": {"required_keys": ["facts"], "checks": ["length(facts) > `0`"]}},
        {"id": "summarise", "tool": "echo", "args": summary_args, "depends_on": ["inspect"],
         "done_when": {"checks": ["risk_score <= `10`"]}},
        {"id": "history", "tool": "echo", "args": {"orders": 12}, "depends_on": ["inspect"]},
        {"id": "publish", "tool": "noop", "depends_on": ["summarise", "history"]},
    )  # fmt: skip


def _executions(records):
    return [record.step_id for record in records.records]


def test_normal_completion_runs_every_step_once_in_dependency_order(executor, records, tmp_path):
    result = LocalRun(_compiler(), executor, tmp_path, approver="carol").run(
        _report_plan({"risk_score": 3})
    )

    assert result.status == "succeeded"
    assert _executions(records) == ["inspect", "summarise", "history", "publish"]
    assert result.state.steps["inspect"].output == {"facts": ["contract A", "contract B"]}


def test_a_tool_failure_stops_the_run_for_a_replan_with_its_reset_set(executor, records, tmp_path):
    failing = plan(
        {"id": "inspect", "tool": "echo", "args": {"facts": [1]}},
        {"id": "fetch", "tool": "fail", "args": {"message": "supplier API down"},
         "depends_on": ["inspect"]},
        {"id": "publish", "tool": "noop", "depends_on": ["fetch"]},
    )  # fmt: skip

    result = LocalRun(_compiler(), executor, tmp_path, approver="carol").run(failing)

    assert result.status == "needs_replan"
    assert result.state.failed_step == "fetch"
    assert result.state.reset == ("fetch", "publish")
    assert result.state.preserved == ("inspect",)
    assert result.state.steps["fetch"].error == "supplier API down"
    assert "publish" not in _executions(records)


def test_a_replan_resumes_the_run_and_never_reexecutes_preserved_steps(executor, records, tmp_path):
    planner = ScriptedPlanner([_report_plan({"risk_score": 4})])

    result = LocalRun(_compiler(), executor, tmp_path, planner=planner, approver="carol").run(
        _report_plan({"risk_score": 99})
    )

    assert result.status == "succeeded"
    assert len(result.versions) == 2
    # one step at a time: the invalid summary stops the run before 'history' starts
    assert _executions(records) == ["inspect", "summarise", "summarise", "history", "publish"]
    assert _executions(records).count("inspect") == 1
    [observation] = planner.observations
    assert observation.failed_step == "summarise"
    assert observation.verdict["errors"] == [
        "check 1 failed: risk_score <= `10` with risk_score = 99"
    ]
    assert observation.completed == {"inspect": {"facts": ["contract A", "contract B"]}}


def test_a_user_who_changes_the_requirement_mid_run_gets_a_new_version_that_keeps_the_work(
    tmp_path,
):
    # The user rejects the waiting publication because the requirement changed; the new
    # version publishes elsewhere, and what was already done is kept.
    first = plan(
        {"id": "inspect", "tool": "echo", "args": {"facts": [1]}},
        {"id": "publish", "tool": "file_write", "args": {"path": "report.md", "content": "v1"},
         "depends_on": ["inspect"]},
        requires_approval_before=["file_write"],
    )  # fmt: skip
    changed = plan(
        {"id": "inspect", "tool": "echo", "args": {"facts": [1]}},
        {"id": "publish", "tool": "file_write", "args": {"path": "board.md", "content": "v2"},
         "depends_on": ["inspect"]},
        requires_approval_before=["file_write"],
    )  # fmt: skip
    policy = Policy.allowing(["compute", "file_write"])
    scheduler = Scheduler(compile_graph(first, policy), "run-1", gate=GATE)
    scheduler.prepare(approved(scheduler.graph))
    scheduler.done(*scheduler.get_ready(), _ok({"facts": [1]}))
    assert scheduler.state.status == "awaiting_approval"

    scheduler.reject("publish", "carol", "the board wants it, not the wiki")
    new_graph = compile_graph(changed, policy)
    events = scheduler.resume(new_graph, 2, "dave", approved(new_graph, 2))

    assert events[0].facts["preserved"] == ["inspect"]
    assert scheduler.state.status == "awaiting_approval"
    scheduler.approve("publish", "carol", approval_hash(new_graph.nodes["publish"]))
    assert scheduler.get_ready() == ("publish",)


def _ok(output):
    from forge.runtime import ToolResult

    return ToolResult("succeeded", output=output)


def test_a_permission_refusal_stops_the_plan_before_anything_runs(executor, tmp_path):
    compiler = _compiler(Policy.allowing(["compute"]))
    document = plan(
        {"id": "inspect", "tool": "echo", "args": {}},
        {"id": "wipe", "tool": "shell", "args": {"argv": ["rm", "-rf", "data"]},
         "depends_on": ["inspect"]},
    )  # fmt: skip

    result = LocalRun(compiler, executor, tmp_path, approver="carol").run(document)

    assert result.status == "not_compiled"
    [refusal] = [d for d in result.diagnostics if d.code == "unauthorized_tool"]
    assert refusal.nodes == ("wipe",)
    assert executor.calls == 0


def test_a_step_waiting_for_approval_runs_once_an_approver_signs_for_its_arguments(
    executor, records, tmp_path
):
    document = plan(
        {"id": "note", "tool": "echo", "args": {"text": "hi"}},
        requires_approval_before=["compute"],
    )
    run = LocalRun(_compiler(), executor, tmp_path, approver="carol", signer=SIGNER)

    result = run.run(document)

    assert result.status == "succeeded"
    approved = [e for e in result.events if e.event_type == "step_approved"]
    assert [(e.step_id, e.actor) for e in approved] == [("note", "carol")]
    assert records.records[0].status == "succeeded"
