"""``forge run --sandbox``: the CLI confines shell steps as the worker does, bubblewrap
by default and failing closed without it, rlimits only when asked for by name."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
PLAN = """
goal: Build the release bundle
steps:
  - id: build
    description: Build the release bundle
    tool: shell
    args: {argv: [sh, -c, "echo built > bundle.txt"]}
"""


def forge_run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``forge run`` of PLAN with a PATH on which no ``bwrap`` can be found."""
    (tmp_path / "plan.yaml").write_text(PLAN)
    (tmp_path / "bin").mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO")}
    return subprocess.run(
        [sys.executable, "-m", "forge.cli", "run", str(tmp_path / "plan.yaml"),
         "--workspace", str(tmp_path / "ws"), "--approve-as", "carol", *args],
        capture_output=True, text=True, env={**env, "PATH": str(tmp_path / "bin")},
        cwd=REPO, timeout=120,
    )  # fmt: skip


def test_without_bubblewrap_the_shell_step_fails_closed_and_the_run_needs_a_replan(tmp_path):
    result = forge_run(tmp_path)

    assert result.returncode == 3
    assert "step build failed: shell steps cannot run: bubblewrap (bwrap) is not on PATH." in (
        result.stdout
    )
    assert "forge run --sandbox rlimits" in result.stdout
    assert not (tmp_path / "ws" / "bundle.txt").exists()


def test_sandbox_rlimits_runs_the_shell_step_and_warns(tmp_path):
    result = forge_run(tmp_path, "--sandbox", "rlimits")

    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stderr == (
        "forge: warning: --sandbox rlimits: shell steps run with resource limits only, "
        "without bubblewrap\n"
    )
    assert (tmp_path / "ws" / "bundle.txt").read_text() == "built\n"


def test_an_unknown_sandbox_mode_is_refused(tmp_path):
    result = forge_run(tmp_path, "--sandbox", "none")

    assert result.returncode == 2
    assert "--sandbox: invalid choice: 'none' (choose from 'bwrap', 'rlimits')" in result.stderr
