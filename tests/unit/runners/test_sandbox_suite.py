"""The sandbox suite: what docs/security.md promises of the shell sandbox.

With bubblewrap (skipped when it is missing, failed instead under
FORGE_REQUIRE_SERVICES=1): the command cannot write outside the workspace, cannot read
the host's secrets (files, the worker's environment), cannot reach the network, cannot
outlive the step (not even as a daemon), and a fork bomb is contained. In both modes, a
disk fill is stopped at the quota. Without bubblewrap, simulated on every machine by a
PATH that has no ``bwrap``: a shell step fails closed instead of running unconfined,
and the explicit rlimits mode runs it and says so on the record."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from forge.compiler import GraphCompiler
from forge.plan import from_data
from forge.runners import Limits, Sandbox, ShellRunner, builtin_runners
from forge.runners.base import Runner
from forge.runtime import ApprovalSigner, ExecutionRecord, InMemoryRecordStore, ToolExecutor
from forge.runtime.local import LocalRun
from forge.tools import DEFAULT_POLICY, PolicyEngine, builtin_registry

UNAVAILABLE = (
    "shell steps cannot run: {reason}. Install bubblewrap (the 'bubblewrap' package), or "
    "accept weaker isolation with FORGE_SANDBOX=rlimits (forge run --sandbox rlimits): "
    "resource limits only, with the host's files, network and processes in reach."
)


@pytest.fixture
def runner(bubblewrap: None) -> ShellRunner:
    return ShellRunner(Sandbox("bwrap"))


def _probe(code: str) -> list[str]:
    return ["python3", "-c", code]


@pytest.fixture
def secrets() -> Iterator[list[Path]]:
    """World-readable secrets outside the workspace, in the host's /tmp and in /root:
    only the mount namespace hides them; and /etc/shadow, which is never mounted."""
    token = uuid.uuid4().hex
    paths = [Path(f"/tmp/forge-secret-{token}"), Path(f"/root/forge-secret-{token}")]
    for path in paths:
        path.write_text(f"TOPSECRET-{token}")
        path.chmod(0o644)
    yield [*paths, Path("/etc/shadow")]
    for path in paths:
        path.unlink()


def test_secret_files_outside_the_workspace_are_not_visible(runner, spec, make_context, secrets):
    reader = (
        "import sys\n"
        "for path in sys.argv[1:]:\n"
        "    try:\n"
        "        print('READ', open(path).read())\n"
        "    except OSError as exc:\n"
        "        print('refused', path, type(exc).__name__)\n"
    )

    outcome = runner.run(
        spec("shell"), {"argv": [*_probe(reader), *map(str, secrets)]}, make_context()
    )

    assert outcome.ok
    assert "TOPSECRET" not in outcome.output["stdout"]
    assert outcome.output["stdout"] == "".join(
        f"refused {path} FileNotFoundError\n" for path in secrets
    )


def test_what_programs_need_from_etc_is_readable(runner, spec, make_context):
    outcome = runner.run(
        spec("shell"), {"argv": ["sh", "-c", "grep -c . /etc/passwd /etc/group"]}, make_context()
    )

    assert outcome.ok, outcome.output["stderr"]


def test_the_project_and_home_directories_are_not_mounted(runner, spec, make_context):
    outcome = runner.run(
        spec("shell"),
        {"argv": _probe("import json, os; print(json.dumps(os.listdir('/')))")},
        make_context(),
    )

    top = json.loads(outcome.output["stdout"])
    assert "root" not in top and "home" not in top and "work" not in top
    assert "workspace" in top


def test_writing_outside_the_workspace_fails_and_leaves_the_host_untouched(
    runner, spec, make_context, tmp_path
):
    outside = tmp_path / "outside"
    outside.mkdir()
    outside.chmod(0o777)  # permissions would allow it: only the sandbox stops it
    writer = (
        "import sys\n"
        "for path in sys.argv[1:]:\n"
        "    try:\n"
        "        open(path, 'w').write('escaped')\n"
        "        print('wrote', path)\n"
        "    except OSError as exc:\n"
        "        print('refused', path, type(exc).__name__)\n"
    )
    targets = [str(outside / "escaped.txt"), "/usr/forge-escaped.txt", "/etc/forge-escaped"]

    outcome = runner.run(spec("shell"), {"argv": [*_probe(writer), *targets]}, make_context())

    assert [line.split()[0] for line in outcome.output["stdout"].splitlines()] == ["refused"] * 3
    assert not (outside / "escaped.txt").exists()
    assert not Path("/usr/forge-escaped.txt").exists()


def test_the_private_tmp_does_not_reach_the_host(runner, spec, make_context):
    name = f"/tmp/forge-private-{uuid.uuid4().hex}"

    outcome = runner.run(
        spec("shell"),
        {"argv": ["sh", "-c", f"echo private > {name} && cat {name}"]},
        make_context(),
    )

    assert outcome.output["stdout"] == "private\n"
    assert not Path(name).exists()


def test_the_network_is_unreachable_even_on_loopback(runner, spec, make_context):
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        socket.create_connection(("127.0.0.1", port), timeout=1).close()  # reachable from here
        dialer = (
            "import socket, sys\n"
            "try:\n"
            f"    socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
            "except OSError as exc:\n"
            "    print(type(exc).__name__); sys.exit(3)\n"
            "print('connected')\n"
        )

        outcome = runner.run(spec("shell"), {"argv": _probe(dialer)}, make_context())

    assert outcome.exit_code == 3
    assert outcome.output["stdout"] == "ConnectionRefusedError\n"


def test_the_command_has_no_capabilities_and_cannot_regain_root(runner, spec, make_context):
    status = (
        "print(''.join(line for line in open('/proc/self/status')"
        " if line.startswith(('Cap', 'NoNewPrivs'))))"
    )

    outcome = runner.run(spec("shell"), {"argv": _probe(status)}, make_context())

    lines = dict(line.split(":\t") for line in outcome.output["stdout"].split("\n") if line)
    assert {lines[name] for name in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")} == {
        "0000000000000000"
    }
    assert lines["NoNewPrivs"] == "1"


def test_only_the_command_s_own_processes_are_visible(runner, spec, make_context):
    outcome = runner.run(
        spec("shell"),
        {"argv": _probe("import os; print(len([p for p in os.listdir('/proc') if p.isdigit()]))")},
        make_context(),
    )

    # bwrap's init and the probe itself: the host's processes are in another pid namespace.
    assert int(outcome.output["stdout"]) <= 3


def test_the_worker_s_environment_is_nowhere_in_the_sandbox(
    runner, spec, make_context, monkeypatch
):
    monkeypatch.setenv("FORGE_TEST_SECRET", "hunter2")
    # Every process the command can see, its own environment included.
    snoop = "env; for f in /proc/[0-9]*/environ; do cat $f 2>/dev/null; echo; done"

    outcome = runner.run(spec("shell"), {"argv": ["sh", "-c", snoop]}, make_context())

    assert outcome.ok
    assert "PATH=" in outcome.output["stdout"]  # the snoop did read environments
    assert "hunter2" not in outcome.output["stdout"]


def test_a_daemon_that_leaves_the_session_dies_with_the_step(
    runner, spec, make_context, workspace, processes_mentioning
):
    marker = f"forge-daemon-{uuid.uuid4().hex}"
    daemon = (
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()  # out of the process group the runner kills\n"
        "    if os.fork() == 0:\n"
        "        null = os.open(os.devnull, os.O_RDWR)\n"
        "        for fd in (0, 1, 2):\n"
        "            os.dup2(null, fd)\n"
        "        open('alive', 'w').close()\n"
        f"        time.sleep(60)  # {marker}\n"
        "    os._exit(0)\n"
        "while not os.path.exists('alive'):\n"
        "    time.sleep(0.01)\n"
        "print('detached', flush=True)\n"
    )

    outcome = runner.run(spec("shell"), {"argv": _probe(daemon)}, make_context())

    assert outcome.output["stdout"] == "detached\n"
    assert (workspace / "alive").exists()  # the daemon did start
    assert processes_mentioning(marker) == []


def test_a_fork_bomb_is_contained_and_the_worker_survives_in_both_modes(
    spec, make_context, sandbox_mode, processes_mentioning
):
    marker = f"forge-fork-bomb-{uuid.uuid4().hex}"
    bomb = (
        "import os, time\n"
        "while True:\n"
        "    try:\n"
        "        os.fork()\n"
        "    except OSError:\n"
        "        print('fork refused', flush=True)\n"
        f"        time.sleep(60)  # {marker}\n"
    )
    runner = ShellRunner(Sandbox(sandbox_mode, limits=Limits(processes=16)))  # type: ignore[arg-type]

    outcome = runner.run(spec("shell"), {"argv": _probe(bomb), "timeout_s": 2}, make_context())

    assert outcome.error_code == "timeout"
    assert "fork refused" in outcome.output["stdout"]  # the process limit held, not just the clock
    assert processes_mentioning(marker) == []
    assert subprocess.run([sys.executable, "-c", "pass"], check=False).returncode == 0


# --- Disk quota, in both modes ----------------------------------------------------------

QUOTA = 20 << 20
# How far past the quota a fast writer may get before the watchdog's next look.
OVERSHOOT = 128 << 20
FILL = (
    "import os, sys\n"
    "block = b'x' * (1 << 20)\n"
    "for directory, count in zip(sys.argv[1::2], sys.argv[2::2]):\n"
    "    os.makedirs(directory, exist_ok=True)\n"
    "    for n in range(int(count)):\n"
    "        with open(os.path.join(directory, f'fill-{n}'), 'wb') as out:\n"
    "            out.write(block)\n"
)


def _fill(*targets: tuple[str, int]) -> list[str]:
    """argv writing files of 1 MiB: ``count`` of them into each ``directory`` (which sh
    expands, so ``$TMPDIR`` works in both modes)."""
    args = " ".join(f'"{directory}" {count}' for directory, count in targets)
    return ["sh", "-c", f'exec python3 -c "$0" {args}', FILL]


@pytest.fixture
def scratch_root() -> Iterator[Path]:
    """Where steps' temporary directories go: under the system's, as in production,
    since without bubblewrap the sandbox user must reach TMPDIR by its host path (the
    pytest tmp_path is private to root)."""
    root = Path(tempfile.mkdtemp(prefix="forge-test-scratch-"))
    root.chmod(0o711)
    yield root
    shutil.rmtree(root)


@pytest.fixture
def quota_runner(sandbox_mode: str, scratch_root: Path) -> ShellRunner:
    sandbox = Sandbox(sandbox_mode, limits=Limits(disk_bytes=QUOTA))  # type: ignore[arg-type]
    return ShellRunner(sandbox, scratch_root=scratch_root)


def _usage(root: Path) -> int:
    return sum(path.stat().st_size for path in root.rglob("*") if path.is_file())


@pytest.mark.parametrize("directory", ["fill", "$TMPDIR/fill"], ids=["workspace", "tmp"])
def test_a_disk_fill_is_stopped_at_the_quota(
    quota_runner, spec, make_context, workspace, scratch_root, directory
):
    started = time.monotonic()

    outcome = quota_runner.run(spec("shell"), {"argv": _fill((directory, 4096))}, make_context())

    assert outcome.error_code == "disk_quota_exceeded"
    assert outcome.error == (
        "the step wrote more than its disk quota of 20971520 bytes "
        "(workspace and temporary directory together)"
    )
    assert time.monotonic() - started < 5  # stopped by the quota, not by the timeout
    assert _usage(workspace) < QUOTA + OVERSHOOT  # 4 GiB were asked for
    assert list(scratch_root.iterdir()) == []  # the temporary directory went with the step


def test_the_quota_counts_the_workspace_and_the_temporary_directory_together(
    quota_runner, spec, make_context
):
    half = QUOTA // (2 << 20) + 2  # MiB: each half fits the quota, both do not

    outcome = quota_runner.run(
        spec("shell"), {"argv": _fill(("a", half), ("$TMPDIR/b", half))}, make_context()
    )

    assert outcome.error_code == "disk_quota_exceeded"


def test_a_single_file_stops_growing_one_byte_past_the_quota(
    quota_runner, spec, make_context, workspace
):
    outcome = quota_runner.run(
        spec("shell"), {"argv": ["sh", "-c", "head -c 50000000 /dev/zero > big"]}, make_context()
    )

    assert outcome.error_code == "disk_quota_exceeded"
    assert (workspace / "big").stat().st_size == QUOTA + 1


def test_files_from_earlier_steps_do_not_count_against_the_quota(
    quota_runner, spec, make_context, workspace
):
    (workspace / "earlier.bin").write_bytes(b"e" * (QUOTA + (10 << 20)))

    outcome = quota_runner.run(spec("shell"), {"argv": _fill(("more", 5))}, make_context())

    assert outcome.ok, outcome.error
    assert _usage(workspace / "more") == 5 << 20


def test_the_temporary_directory_is_private_to_the_step_and_deleted_after_it(
    quota_runner, spec, make_context, scratch_root
):
    outcome = quota_runner.run(
        spec("shell"),
        {"argv": ["sh", "-c", 'echo kept > "$TMPDIR/note" && cat "$TMPDIR/note"']},
        make_context(),
    )

    assert outcome.output["stdout"] == "kept\n"
    assert list(scratch_root.iterdir()) == []


# --- Without bubblewrap ---------------------------------------------------------------


@pytest.fixture
def no_bwrap_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A PATH holding only what the test puts there: ``bwrap`` cannot be found."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    return bin_dir


def test_without_bubblewrap_a_shell_step_fails_closed_and_says_how_to_fix_it(
    spec, make_context, workspace, no_bwrap_on_path
):
    outcome = ShellRunner().run(
        spec("shell"), {"argv": ["sh", "-c", "cat /etc/passwd > seen"]}, make_context()
    )

    assert not outcome.ok
    assert outcome.error_code == "sandbox_unavailable"
    assert outcome.error == UNAVAILABLE.format(reason="bubblewrap (bwrap) is not on PATH")
    assert not (workspace / "seen").exists()  # the command never ran


def test_a_bubblewrap_that_fails_its_probe_fails_closed_with_its_own_words(
    spec, make_context, workspace, no_bwrap_on_path
):
    fake = no_bwrap_on_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)

    outcome = ShellRunner().run(spec("shell"), {"argv": ["sh", "-c", "touch seen"]}, make_context())

    assert outcome.error_code == "sandbox_unavailable"
    assert outcome.error == UNAVAILABLE.format(
        reason="bubblewrap failed its probe: bwrap: No permissions to create new namespace"
    )
    assert not (workspace / "seen").exists()


def test_without_bubblewrap_the_runners_are_built_and_other_tools_still_work(
    spec, make_context, no_bwrap_on_path
):
    runners = builtin_runners()

    outcome = runners["echo"].run(spec("echo"), {"said": "hi"}, make_context())

    assert outcome.ok
    assert outcome.output == {"said": "hi"}


def _record_of_one_step(
    runners: dict[str, Runner], workspace: Path, step: dict[str, object]
) -> ExecutionRecord:
    """Runs a one-step plan through the real ToolExecutor; the step's execution record."""
    registry, policy = builtin_registry(), PolicyEngine(DEFAULT_POLICY)
    records = InMemoryRecordStore()
    executor = ToolExecutor(registry, policy, records, runners, approvals=ApprovalSigner(b"k" * 32))
    document = from_data({"goal": "Build the release bundle", "steps": [step]})
    LocalRun(GraphCompiler(registry, policy), executor, workspace, approver="carol").run(document)
    [record] = records.records
    return record


def test_without_bubblewrap_the_failed_step_is_recorded_as_sandbox_unavailable(
    workspace, no_bwrap_on_path
):
    step = {"id": "build", "description": "Build the bundle", "tool": "shell",
            "args": {"argv": ["sh", "-c", "touch seen"]}}  # fmt: skip

    record = _record_of_one_step(builtin_runners(), workspace, step)

    assert (record.status, record.error_code, record.isolation) == (
        "failed",
        "sandbox_unavailable",
        "none",
    )
    assert not (workspace / "seen").exists()


def test_the_explicit_rlimits_mode_runs_the_step_and_records_it_as_rlimits_only(
    workspace, no_bwrap_on_path
):
    step = {"id": "build", "description": "Build the bundle", "tool": "shell",
            "args": {"argv": ["sh", "-c", "echo built > bundle.txt"]}}  # fmt: skip

    record = _record_of_one_step(builtin_runners(sandbox="rlimits"), workspace, step)

    assert (record.status, record.isolation) == ("succeeded", "rlimits-only")
    assert record.notes == (
        "sandbox mode rlimits (an explicit opt-in): resource limits and an unprivileged user "
        "only; no bubblewrap, so the command could read the host's files and reach the network",
    )
    assert (workspace / "bundle.txt").read_text() == "built\n"
