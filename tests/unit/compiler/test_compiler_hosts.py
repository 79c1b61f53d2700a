"""An ``http_request`` to a host its runner will refuse is a compile error,
``host_not_allowed``, when the URL is written in the plan (issue 25, item 3): a version
that cannot run is never approvable. The compiler learns the allow list from the tool's
spec (the toolbox binds it there, with the runner's own rule); a URL taken from an
earlier step's output is judged at run time, by the call's preview."""

from __future__ import annotations

from typing import Any

import pytest

from forge.compiler import CallRefused, GraphCompiler, bind_call
from forge.plan import Step, from_data
from forge.runners.base import RunContext
from forge.toolbox import build_toolbox
from forge.tools import DEFAULT_POLICY, HostAllowList, PolicyEngine, builtin_registry

POLICY = PolicyEngine(DEFAULT_POLICY)
ALLOWED = HostAllowList.of(["api.example.com", "hooks.example:8443"])


def post(step_id: str = "send", url: str = "https://evil.example/collect", **fields: Any):
    return {
        "id": step_id,
        "description": "Send the supplier report to the purchasing service",
        "tool": "http_request",
        "args": {"method": "POST", "url": url, "body": {"report": "ok"}},
        "done_when": {"required_keys": ["status"]},
        "rollback_hint": "Ask purchasing to delete the report",
        **fields,
    }


def compile_steps(*steps: dict[str, Any], registry=None):
    document = from_data({"goal": "Report to purchasing", "steps": list(steps)})
    return GraphCompiler(registry or builtin_registry(ALLOWED), POLICY).compile(document)


def refused(result):
    return [d.to_data() for d in result.diagnostics if d.code == "host_not_allowed"]


def test_a_literal_url_to_a_host_off_the_allow_list_is_an_error_naming_the_node():
    result = compile_steps(post())

    assert refused(result) == [
        {
            "code": "host_not_allowed",
            "severity": "error",
            "message": "step 'send' calls http_request, which will refuse it: host "
            "'evil.example' (port 443) is not on the allow list",
            "nodes": ["send"],
            "edges": [],
            "hint": "add evil.example (any port) or evil.example:443 to "
            "FORGE_HTTP_ALLOWED_HOSTS (the forge command: --allow-host evil.example), or "
            "call a host on the list",
        }
    ]
    assert not result.ok and result.graph is None


def test_a_read_is_refused_as_well_since_the_runner_refuses_every_method():
    result = compile_steps(post(args={"method": "GET", "url": "http://evil.example/"}))

    assert [d["nodes"] for d in refused(result)] == [["send"]]


@pytest.mark.parametrize(
    "url",
    [
        "https://api.example.com/orders",
        "http://API.example.com:8080/",
        "https://hooks.example:8443/",
    ],
)
def test_a_host_on_the_allow_list_compiles(url):
    result = compile_steps(post(url=url))

    assert refused(result) == []
    assert result.ok


def test_a_listed_host_with_a_port_allows_that_port_only():
    assert refused(compile_steps(post(url="https://hooks.example/"))) != []


def test_a_url_taken_from_an_earlier_step_is_judged_at_run_time_not_now():
    find = {
        "id": "find",
        "description": "Find the purchasing endpoint",
        "tool": "echo",
        "args": {"url": "https://evil.example/"},
        "done_when": {"required_keys": ["url"]},
    }
    send = post(depends_on=["find"])
    send["args"]["url"] = {"$from": "find", "path": "url"}

    result = compile_steps(find, send)

    assert refused(result) == []
    assert result.ok


def test_a_literal_url_beside_values_from_earlier_steps_is_still_judged():
    find = {"id": "find", "description": "Write the report body", "tool": "echo",
            "args": {"text": "ok"}, "done_when": {"required_keys": ["text"]}}  # fmt: skip
    send = post(depends_on=["find"])
    send["args"]["body"] = {"$from": "find", "path": "text"}

    assert [d["nodes"] for d in refused(compile_steps(find, send))] == [["send"]]


def test_each_step_calling_a_refused_host_is_named():
    result = compile_steps(post("one"), post("two", url="https://api.example.com/"), post("three"))

    assert [d["nodes"] for d in refused(result)] == [["one"], ["three"]]


def test_a_registry_not_told_of_an_allow_list_does_not_judge_hosts():
    # builtin_registry() alone describes the tools, not a deployment's reach.
    assert refused(compile_steps(post(), registry=builtin_registry())) == []


def test_the_toolbox_binds_the_allow_list_its_runner_enforces(tmp_path):
    toolbox = build_toolbox(allowed_hosts=["api.example.com"], python_tools=False)
    runner = toolbox.runners["http_request"]
    spec = toolbox.registry.get("http_request")
    context = RunContext("run-1", "send", tmp_path, timeout_s=5)

    for url in ("https://api.example.com/x", "https://evil.example/x", "ftp://api.example.com/"):
        args = {"method": "POST", "url": url}
        compiled = spec.refusal(args)
        previewed = runner.preview(spec, args, context).refusal
        assert compiled == previewed, url
    result = GraphCompiler(toolbox.registry, POLICY).compile(
        from_data({"goal": "Report", "steps": [post()]})
    )
    assert [d["code"] for d in refused(result)] == ["host_not_allowed"]


def test_an_agent_call_to_a_refused_host_is_refused_when_it_is_bound():
    step = Step(id="agent", description="Report it", tools_allowed=("http_request",))

    with pytest.raises(CallRefused) as caught:
        bind_call(
            builtin_registry(ALLOWED),
            POLICY,
            "http_request",
            {"method": "POST", "url": "https://evil.example/"},
            step,
        )

    assert caught.value.code == "host_not_allowed"
    assert "evil.example" in caught.value.message
    assert "FORGE_HTTP_ALLOWED_HOSTS" in caught.value.message
