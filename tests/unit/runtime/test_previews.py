"""Preview, then commit (SPEC section 5): a step waiting for approval shows what it will
do, the approval binds that preview, and a call whose preview changed by commit time is
refused and asked again. Events carry the artifacts an attempt left, a failed one too."""

from __future__ import annotations

from types import SimpleNamespace

import mcp.types as mcp_types
import pytest

from forge.compiler import GraphCompiler
from forge.runners import builtin_runners
from forge.runners.base import Artifact, RunContext, RunnerOutcome
from forge.runners.http import HttpRunner
from forge.runners.mcp import McpToolRunner, mcp_tool_spec
from forge.runners.shell import ShellRunner
from forge.runtime import InMemoryRecordStore, Scheduler, ToolExecutor, TransitionRefused
from forge.runtime.previews import agent_preview, step_previewer
from forge.tools import Policy, PolicyEngine, ToolRegistry, ToolSpec, builtin_registry

from .conftest import GATE, SIGNER, approved, compile_graph, plan

WRITES = Policy.allowing(["compute", "file_write"])


def _save(content: str = "new\n"):
    return compile_graph(
        plan(
            {"id": "save", "tool": "file_write", "args": {"path": "notes.md", "content": content}},
            requires_approval_before=["file_write"],
        ),
        WRITES,
    )


def _running(graph, workspace, records=None):
    executor = ToolExecutor(
        builtin_registry(), PolicyEngine(WRITES), records or InMemoryRecordStore(),
        builtin_runners(), approvals=SIGNER,
    )  # fmt: skip
    scheduler = Scheduler(
        graph, "run-1", gate=GATE, previewer=step_previewer(executor, "run-1", lambda: workspace)
    )
    scheduler.prepare(approved(graph))
    return scheduler, executor


def _context(graph, workspace, step_id="save"):
    binding = graph.nodes[step_id].binding
    return RunContext("run-1", step_id, workspace, timeout_s=binding.timeout_s)


def _approve(scheduler, step_id="save", approver="carol"):
    node = scheduler.graph.nodes[step_id]
    preview = scheduler.state.steps[step_id].preview_hash
    scheduler.approve(step_id, approver, node.binding.args_hash, preview)
    return SIGNER.issue("run-1", step_id, node.binding.args_hash, approver, preview)


def _waiting_preview(scheduler, step_id="save"):
    [*_, event] = [
        e for e in scheduler.events
        if e.step_id == step_id and e.event_type == "step_awaiting_approval"
    ]  # fmt: skip
    return event.facts["preview"]


def test_a_write_waiting_for_approval_shows_its_diff_before_anything_is_written(tmp_path):
    (tmp_path / "notes.md").write_text("old\n")

    scheduler, _ = _running(_save(), tmp_path)

    preview = _waiting_preview(scheduler)
    assert preview["kind"] == "file_write"
    assert preview["summary"] == "write notes.md (+1 -1)"
    assert "-old\n+new\n" in preview["text"]
    assert scheduler.state.steps["save"].preview_hash == preview["hash"]
    assert (tmp_path / "notes.md").read_text() == "old\n"


def test_an_approved_preview_commits_and_the_record_keeps_the_preview(tmp_path):
    records = InMemoryRecordStore()
    scheduler, executor = _running(_save(), tmp_path, records)
    token = _approve(scheduler)
    [step_id] = scheduler.get_ready()

    result = executor.execute(
        scheduler.graph.nodes[step_id].binding,
        _context(scheduler.graph, tmp_path),
        token=token,
        plan_approval_scopes=("file_write",),
    )

    assert result.succeeded
    assert (tmp_path / "notes.md").read_text() == "new\n"
    [record] = records.records
    assert [a.name for a in record.artifacts] == ["preview", "diff"]
    assert record.artifacts[0].text == _waiting_preview(scheduler)["text"]


def test_a_file_changed_after_approval_is_refused_and_asked_again(tmp_path):
    (tmp_path / "notes.md").write_text("old\n")
    scheduler, executor = _running(_save(), tmp_path)
    token = _approve(scheduler)
    (tmp_path / "notes.md").write_text("edited meanwhile\n")
    [step_id] = scheduler.get_ready()

    result = executor.execute(
        scheduler.graph.nodes[step_id].binding,
        _context(scheduler.graph, tmp_path),
        token=token,
        plan_approval_scopes=("file_write",),
    )
    scheduler.done(step_id, result)

    assert result.error_code == "preview_changed"
    assert (tmp_path / "notes.md").read_text() == "edited meanwhile\n"
    assert scheduler.state.steps["save"].status == "awaiting_approval"
    assert scheduler.state.steps["save"].approved_hash == ""
    assert "-edited meanwhile\n+new\n" in _waiting_preview(scheduler)["text"]
    assert scheduler.state.status == "awaiting_approval"
    assert scheduler.state.used_tokens == 0


def test_an_approval_of_a_preview_no_longer_shown_is_refused(tmp_path):
    scheduler, _ = _running(_save(), tmp_path)
    args_hash = scheduler.graph.nodes["save"].binding.args_hash

    with pytest.raises(TransitionRefused) as refused:
        scheduler.approve("save", "carol", args_hash, "0" * 64)

    assert refused.value.code == "preview_changed"


def test_a_token_without_the_preview_the_approver_saw_is_refused(tmp_path):
    scheduler, executor = _running(_save(), tmp_path)
    _approve(scheduler)
    args_hash = scheduler.graph.nodes["save"].binding.args_hash
    stale = SIGNER.issue("run-1", "save", args_hash, "carol")  # bound to no preview
    [step_id] = scheduler.get_ready()

    result = executor.execute(
        scheduler.graph.nodes[step_id].binding,
        _context(scheduler.graph, tmp_path),
        token=stale,
        plan_approval_scopes=("file_write",),
    )

    assert result.error_code == "preview_changed"
    assert not (tmp_path / "notes.md").exists()


def test_an_http_preview_is_the_exact_request_with_secret_headers_masked(tmp_path):
    runner = HttpRunner(["api.example.com"])
    args = {
        "method": "POST",
        "url": "https://api.example.com/orders",
        "headers": {"Authorization": "Bearer s3cr3t-value", "X-Api-Key": "k-123", "Accept": "json"},
        "body": {"item": 7, "password": "hunter2"},
    }
    context = RunContext("run-1", "send", tmp_path, timeout_s=5)

    preview = runner.preview(builtin_registry().get("http_request"), args, context)

    assert preview.kind == "http_request"
    assert preview.summary == "POST https://api.example.com/orders"
    lines = preview.text.splitlines()
    assert lines[0] == "POST https://api.example.com/orders"
    assert "Authorization: [masked]" in lines
    assert "X-Api-Key: [masked]" in lines
    assert "Accept: json" in lines
    assert any(line.startswith("Idempotency-Key: forge-") for line in lines)
    assert "s3cr3t" not in preview.text and "k-123" not in preview.text
    assert '"password": "[redacted]"' in preview.text and '"item": 7' in preview.text


def test_an_http_preview_warns_of_a_host_that_will_be_refused(tmp_path):
    preview = HttpRunner([]).preview(
        builtin_registry().get("http_request"),
        {"method": "DELETE", "url": "https://elsewhere.example/x"},
        RunContext("run-1", "s", tmp_path, timeout_s=5),
    )

    assert preview.summary.endswith("(host not on the allow list: it will be refused)")


def test_a_shell_preview_shows_argv_env_names_and_workspace_never_env_values(tmp_path):
    args = {"argv": ["make", "release"], "env": {"DEPLOY_TOKEN": "tok-999", "STAGE": "prod"}}

    preview = ShellRunner().preview(
        builtin_registry().get("shell"), args, RunContext("run-1", "s", tmp_path, timeout_s=30)
    )

    assert preview.kind == "shell"
    assert preview.summary == "make release"
    lines = preview.text.splitlines()
    assert lines[0] == 'argv: ["make", "release"]'
    assert lines[1] == "env: DEPLOY_TOKEN, HOME, LANG, PATH, STAGE"
    assert lines[2] == f"workspace: {tmp_path}"
    assert "tok-999" not in preview.text and "prod" not in preview.text


def test_an_mcp_preview_names_the_server_tool_arguments_and_annotations(tmp_path):
    hints = mcp_types.ToolAnnotations(destructive_hint=True, open_world_hint=False)
    remote = mcp_types.Tool(name="drop_table", input_schema={"type": "object"}, annotations=hints)
    spec = mcp_tool_spec("db", remote)
    runner = McpToolRunner(SimpleNamespace(name="db"), "drop_table", hints)  # type: ignore[arg-type]

    preview = runner.preview(
        spec, {"table": "orders"}, RunContext("run-1", "s", tmp_path, timeout_s=5)
    )

    assert preview.kind == "mcp"
    assert preview.summary == "db.drop_table (delete)"
    assert preview.text.splitlines()[:3] == [
        "MCP server 'db', tool 'drop_table'",
        "annotations: destructiveHint=True, openWorldHint=False",
        "read as: side effect delete, risk high, not idempotent",
    ]
    assert '"table": "orders"' in preview.text


def test_an_agent_step_is_previewed_as_what_it_may_call():
    graph = compile_graph(
        plan(
            {"id": "look", "tools_allowed": ["file_read", "echo"],
             "done_when": {"required_keys": ["facts"]}},
        )
    )  # fmt: skip

    preview = agent_preview(graph.nodes["look"])

    assert preview.kind == "agent"
    assert "- file_read (scope file_read, side effect read, risk low)" in preview.text
    assert "- requires key 'facts'" in preview.text


# --- Artifacts on events -----------------------------------------------------------------

BUILD = ToolSpec("build", "Builds", {"type": "object"}, "compute")


class FailingBuild:
    def run(self, tool, args, context):
        log = Artifact("build.log", "text/plain", b"error: missing semicolon\n")
        return RunnerOutcome.failure("build failed", "nonzero_exit", artifacts=(log,))


def test_a_failed_step_keeps_its_artifacts_on_its_event_and_in_its_state(tmp_path):
    registry = ToolRegistry([*builtin_registry(), BUILD])
    engine = PolicyEngine(Policy.allowing(["compute"]))
    records = InMemoryRecordStore()
    executor = ToolExecutor(registry, engine, records, {"build": FailingBuild()}, approvals=SIGNER)
    graph = GraphCompiler(registry, engine).compile(plan({"id": "make", "tool": "build"})).graph
    scheduler = Scheduler(graph, "run-1", gate=GATE)
    scheduler.prepare(approved(graph))
    [step_id] = scheduler.get_ready()

    result = executor.execute(graph.nodes[step_id].binding, _context(graph, tmp_path, "make"))
    [failed, _] = scheduler.done(step_id, result)

    [record] = records.records
    expected = {
        "name": "build.log",
        "media_type": "text/plain",
        "size": 25,
        "truncated": False,
        "record": record.id,
    }
    assert failed.event_type == "step_failed"
    assert failed.artifacts == (expected,)
    assert failed.to_data()["artifacts"] == [expected]
    assert scheduler.state.steps["make"].artifacts == (expected,)
    assert scheduler.state.steps["make"].error == "build failed"
