"""The shell runner, in each sandbox mode: argv in the workspace, timeouts that kill the
whole process tree, resource limits, capped output and a clean environment."""

from __future__ import annotations

import os
import time
import uuid

import pytest

from forge.runners import Limits, Sandbox, ShellRunner


def _python(code: str) -> list[str]:
    # The system interpreter: the only one a sandboxed command can see under /usr.
    return ["python3", "-c", code]


def test_a_command_runs_in_the_workspace_and_its_output_is_kept(
    spec, make_context, workspace, sandbox
):
    outcome = ShellRunner(sandbox).run(
        spec("shell"),
        {"argv": ["sh", "-c", "echo made > made.txt; echo out; echo err >&2"]},
        make_context(),
    )

    assert outcome.ok
    assert outcome.output == {"exit_code": 0, "stdout": "out\n", "stderr": "err\n"}
    assert outcome.exit_code == 0
    assert [(a.name, a.content) for a in outcome.artifacts] == [
        ("stdout", b"out\n"),
        ("stderr", b"err\n"),
    ]
    assert (workspace / "made.txt").read_text() == "made\n"


def test_the_outcome_says_which_isolation_was_in_force(spec, make_context, sandbox_mode, sandbox):
    outcome = ShellRunner(sandbox).run(spec("shell"), {"argv": ["true"]}, make_context())

    assert outcome.isolation == {"bwrap": "bubblewrap", "rlimits": "rlimits-only"}[sandbox_mode]


def test_a_non_zero_exit_fails_the_step_and_keeps_the_logs(spec, make_context, sandbox):
    outcome = ShellRunner(sandbox).run(
        spec("shell"), {"argv": ["sh", "-c", "echo oops >&2; exit 3"]}, make_context()
    )

    assert not outcome.ok
    assert outcome.error_code == "nonzero_exit"
    assert outcome.error == "exit code 3"
    assert outcome.output == {"exit_code": 3, "stdout": "", "stderr": "oops\n"}


def test_an_unknown_program_fails_with_exit_code_127(spec, make_context, sandbox):
    outcome = ShellRunner(sandbox).run(spec("shell"), {"argv": ["no-such-program"]}, make_context())

    assert outcome.error_code == "nonzero_exit"
    assert outcome.exit_code == 127
    assert "no-such-program" in outcome.output["stderr"]


def test_the_worker_environment_never_reaches_the_command(spec, make_context, sandbox, monkeypatch):
    monkeypatch.setenv("FORGE_TEST_SECRET", "hunter2")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "hunter3")

    outcome = ShellRunner(sandbox).run(
        spec("shell"), {"argv": ["env"], "env": {"GREETING": "hello"}}, make_context()
    )

    variables = dict(line.split("=", 1) for line in outcome.output["stdout"].splitlines())
    assert "hunter" not in outcome.output["stdout"]
    assert set(variables) <= {"PATH", "LANG", "HOME", "TMPDIR", "GREETING"}
    assert variables["PATH"] == "/usr/local/bin:/usr/bin:/bin"
    assert variables["GREETING"] == "hello"


@pytest.mark.parametrize("name", ["PATH", "HOME"])
def test_the_command_may_not_override_path_or_home(spec, make_context, name):
    outcome = ShellRunner(Sandbox("rlimits")).run(
        spec("shell"), {"argv": ["env"], "env": {name: "/tmp/evil"}}, make_context()
    )

    assert outcome.error_code == "invalid_args"
    assert outcome.error == f"env may not set {name}: the runner decides it"


def test_a_shell_string_is_not_an_argv(spec, make_context):
    outcome = ShellRunner(Sandbox("rlimits")).run(
        spec("shell"), {"argv": "rm -rf /"}, make_context()
    )

    assert outcome.error_code == "invalid_args"


def test_a_command_outliving_its_timeout_is_killed_with_a_grandchild_ignoring_sigterm(
    spec, make_context, sandbox, processes_mentioning
):
    marker = f"forge-timeout-{uuid.uuid4().hex}"
    grandchild = (
        "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        f"time.sleep(30)  # {marker}"
    )
    child = (
        "import signal, subprocess, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        f"subprocess.Popen(['python3', '-c', {grandchild!r}]); print('started', flush=True); "
        "time.sleep(30)"
    )
    started = time.monotonic()

    outcome = ShellRunner(sandbox).run(
        spec("shell"), {"argv": _python(child), "timeout_s": 1}, make_context(timeout_s=10)
    )

    assert time.monotonic() - started < 3
    assert outcome.error_code == "timeout"
    assert outcome.error == "killed after the 1s timeout"
    assert outcome.output["stdout"] == "started\n"  # what it said before dying is kept
    assert processes_mentioning(marker) == []


def test_the_context_timeout_bounds_a_larger_argument_timeout(spec, make_context, sandbox):
    started = time.monotonic()

    outcome = ShellRunner(sandbox).run(
        spec("shell"), {"argv": ["sleep", "30"], "timeout_s": 60}, make_context(timeout_s=0.5)
    )

    assert outcome.error_code == "timeout"
    assert time.monotonic() - started < 2


def test_background_processes_end_with_the_step(spec, make_context, sandbox, processes_mentioning):
    marker = f"forge-background-{uuid.uuid4().hex}"

    outcome = ShellRunner(sandbox).run(
        spec("shell"),
        {"argv": ["sh", "-c", f"sleep 30 {marker} 2>/dev/null & echo left"]},
        make_context(),
    )

    assert outcome.ok
    assert processes_mentioning(marker) == []


def test_the_address_space_limit_holds(spec, make_context, sandbox_mode):
    runner = ShellRunner(Sandbox(sandbox_mode, limits=Limits(address_space_bytes=256 << 20)))  # type: ignore[arg-type]

    outcome = runner.run(spec("shell"), {"argv": _python("bytearray(1 << 30)")}, make_context())

    assert outcome.error_code == "nonzero_exit"
    assert "MemoryError" in outcome.output["stderr"]


def test_the_file_size_limit_holds(spec, make_context, workspace, sandbox_mode):
    runner = ShellRunner(Sandbox(sandbox_mode, limits=Limits(file_size_bytes=1 << 20)))  # type: ignore[arg-type]

    outcome = runner.run(
        spec("shell"),
        {"argv": ["sh", "-c", "head -c 3000000 /dev/zero > big.bin"]},
        make_context(),
    )

    assert not outcome.ok
    assert (workspace / "big.bin").stat().st_size <= 1 << 20


def test_output_past_the_cap_keeps_the_head_and_says_it_was_truncated(spec, make_context, sandbox):
    runner = ShellRunner(sandbox, max_output_bytes=1000)

    outcome = runner.run(spec("shell"), {"argv": _python("print('x' * 3_000_000)")}, make_context())

    assert outcome.ok
    assert outcome.output["stdout"] == "x" * 1000
    assert outcome.artifacts[0].truncated
    assert "stdout truncated to its first 1000 of 3000001 bytes" in outcome.notes


def test_an_unknown_sandbox_mode_is_refused():
    with pytest.raises(ValueError, match="sandbox mode must be one of bwrap, rlimits: 'auto'"):
        Sandbox("auto")  # type: ignore[arg-type]


@pytest.mark.skipif(os.geteuid() != 0, reason="only a root worker hands the workspace over")
def test_a_root_worker_runs_the_command_as_nobody(spec, make_context, workspace, sandbox):
    outcome = ShellRunner(sandbox).run(
        spec("shell"), {"argv": ["sh", "-c", "id -u; touch owned"]}, make_context()
    )

    assert outcome.output["stdout"] == "65534\n"
    assert (workspace / "owned").stat().st_uid == 65534
