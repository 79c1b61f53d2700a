"""Issue 12, problem 10: ``forge run`` without ``--workspace`` works in a temporary
directory and removes it when it ends, unless ``--keep-workspace`` says to keep it; a
directory the user named is theirs and is always kept."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def forge_in(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO")}
    env["TMPDIR"] = str(tmp)  # where tempfile makes the run's directory
    return subprocess.run(
        [sys.executable, "-m", "forge.cli", *args],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=120,
    )  # fmt: skip


def _workspace_line(stdout: str) -> str:
    return next(line for line in stdout.splitlines() if line.startswith("workspace: "))


def test_a_run_removes_its_temporary_workspace_when_it_ends(tmp_path):
    result = forge_in(tmp_path, "run", "examples/release-notes.yaml", "--approve-as", "carol")

    assert result.returncode == 0, result.stdout + result.stderr
    assert list(tmp_path.glob("forge-run-*")) == []
    assert "(removed when the run ends; --keep-workspace keeps it)" in _workspace_line(
        result.stdout
    )


def test_a_run_that_stops_early_removes_its_temporary_workspace_too(tmp_path):
    result = forge_in(tmp_path, "run", "examples/release-notes.yaml")  # nobody approved it

    assert result.returncode == 4
    assert list(tmp_path.glob("forge-run-*")) == []


def test_keep_workspace_keeps_the_temporary_workspace_and_says_where(tmp_path):
    result = forge_in(
        tmp_path, "run", "examples/release-notes.yaml", "--approve-as", "carol",
        "--keep-workspace",
    )  # fmt: skip

    assert result.returncode == 0, result.stdout + result.stderr
    [kept] = tmp_path.glob("forge-run-*")
    assert _workspace_line(result.stdout) == f"workspace: {kept}"
    assert (kept / "RELEASE-NOTES.md").is_file()


def test_a_workspace_the_user_named_is_kept(tmp_path):
    named = tmp_path / "mine"
    result = forge_in(
        tmp_path, "run", "examples/release-notes.yaml", "--approve-as", "carol",
        "--workspace", str(named),
    )  # fmt: skip

    assert result.returncode == 0, result.stdout + result.stderr
    assert _workspace_line(result.stdout) == f"workspace: {named}"
    assert any(named.iterdir())
