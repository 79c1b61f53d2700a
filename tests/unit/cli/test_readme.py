"""Issue 12, problem 10: every command line in the README's ``sh`` blocks after "The
command line" runs as written, from the checkout, and exits as its comment says ("exit
N"; 0 when the comment names no exit code). The README's first CLI example failed with
``missing_deliverable`` without saying that it was meant to."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
README = REPO / "README.md"


def cli_examples() -> list[tuple[str, int]]:
    text = README.read_text()
    section = text[text.index("## The command line") :]
    section = section[: section.index("\n## ", 1)]
    lines = []
    for block in re.findall(r"```sh\n(.*?)```", section, re.DOTALL):
        for line in block.splitlines():
            command, _, comment = line.partition("#")
            if command.strip():
                code = re.search(r"\bexit (\d+)\b", comment)
                lines.append((command.strip(), int(code.group(1)) if code else 0))
    return lines


def test_the_readme_has_command_line_examples():
    commands = [command for command, _ in cli_examples()]
    assert len(commands) >= 8
    assert all(command.startswith(".venv/bin/forge ") for command in commands)
    # Every file an example names is in the checkout.
    for command in commands:
        for word in shlex.split(command)[2:]:
            for path in re.findall(r"(?:^|:)(examples/[\w./-]+)", word):
                assert (REPO / path).is_file(), f"{command}: no {path}"


@pytest.mark.parametrize(("command", "exit_code"), cli_examples())
def test_each_readme_example_runs_as_written(command, exit_code, tmp_path):
    argv = shlex.split(command)
    # The README's .venv/bin/forge is this interpreter's forge, wherever the venv is.
    forge = Path(sys.executable).parent / "forge"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO", "FORGE_"))}
    env["TMPDIR"] = str(tmp_path)
    if not (REPO / ".venv" / "bin" / "python").exists():
        pytest.skip("the README's examples run from a checkout with .venv (make run/test)")
    result = subprocess.run(
        [str(forge), *argv[1:]], capture_output=True, text=True, env=env, cwd=REPO, timeout=120
    )

    assert result.returncode == exit_code, result.stdout[-3000:] + result.stderr[-3000:]
    assert list(tmp_path.glob("forge-run-*")) == []  # nothing left behind
