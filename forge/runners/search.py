"""The ``file_search`` runner: a regular expression over the workspace's text files.

Files are listed and read here, with the workspace's confinement: a path outside it is
refused, no symlink is followed, version-control directories are skipped, and so are
binary files, files that are not UTF-8 and files over a size cap; the total read is
capped too (``truncated`` then says the search did not see everything). The matching
runs in a child interpreter that is killed at the deadline: Python's ``re`` cannot be
interrupted, and a pattern such as ``(a+)+$`` backtracks for longer than any step may
take, so only a separate process gives the search a real time bound.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from forge.runners.base import RunContext, RunnerOutcome
from forge.runners.errors import FileTooLarge, NotAFile, RunnerError
from forge.runners.workspace import Workspace
from forge.tools.spec import ToolSpec

__all__ = ["FileSearchRunner"]

_SKIPPED_DIRS = frozenset({".git", ".hg", ".svn"})
_LINE_CHARS = 500  # of a matching line, in the output

# Run with -I -S: no site, no environment, no current directory on sys.path; only the
# standard library's json, re and sys are imported.
_MATCHER = r"""
import json, re, sys
job = json.load(sys.stdin)
rx = re.compile(job["pattern"])
found = []
for path, text in job["files"]:
    lines = text.split("\n")  # as editors number them, not str.splitlines
    if lines[-1] == "":
        lines.pop()
    for number, line in enumerate(lines, 1):
        line = line.removesuffix("\r")
        if rx.search(line):
            if len(found) == job["max_results"]:
                json.dump({"matches": found, "truncated": True}, sys.stdout)
                sys.exit(0)
            found.append({"path": path, "line": number, "text": line[:job["line_chars"]]})
json.dump({"matches": found, "truncated": False}, sys.stdout)
"""


class FileSearchRunner:
    def __init__(
        self,
        *,
        max_file_bytes: int = 1 << 20,
        max_total_bytes: int = 32 << 20,
        max_files: int = 10_000,
        default_max_results: int = 100,
    ) -> None:
        self.max_file_bytes = max_file_bytes
        self.max_total_bytes = max_total_bytes
        self.max_files = max_files
        self.default_max_results = default_max_results

    def run(self, tool: ToolSpec, args: Mapping[str, Any], context: RunContext) -> RunnerOutcome:
        deadline = time.monotonic() + context.timeout_s
        pattern = str(args["pattern"])
        try:
            re.compile(pattern)
        except re.error as exc:
            return RunnerOutcome.failure(
                f"invalid regular expression {pattern!r}: {exc}", "invalid_args"
            )
        try:
            workspace = Workspace(context.workspace)
            start = workspace.relative(str(args.get("path") or "."))
            files, complete = self._read(workspace, start, deadline)
        except RunnerError as error:
            return RunnerOutcome.failure(str(error), error.code, isolation="workspace")
        job = {
            "pattern": pattern,
            "max_results": int(args.get("max_results") or self.default_max_results),
            "line_chars": _LINE_CHARS,
            "files": files,
        }
        try:
            done = subprocess.run(
                [sys.executable, "-I", "-S", "-c", _MATCHER],
                input=json.dumps(job).encode(),
                capture_output=True,
                timeout=max(deadline - time.monotonic(), 0.001),
                check=False,
            )
        except subprocess.TimeoutExpired:
            return RunnerOutcome.failure(
                f"the search for {pattern!r} did not finish within {context.timeout_s:g} s",
                "timeout",
                isolation="workspace",
            )
        if done.returncode != 0:
            message = done.stderr.decode(errors="replace").strip().splitlines()[-1:]
            return RunnerOutcome.failure(
                f"the search failed: {''.join(message) or f'exit {done.returncode}'}",
                "tool_failed",
                isolation="workspace",
            )
        output = json.loads(done.stdout)
        output["truncated"] = output["truncated"] or not complete
        notes = () if complete else ("the search stopped at a size or file cap",)
        return RunnerOutcome.success(output, isolation="workspace", notes=notes)

    def _read(
        self, workspace: Workspace, start: str, deadline: float
    ) -> tuple[list[tuple[str, str]], bool]:
        """The text files under ``start`` as (path, text), and whether that is all."""
        files: list[tuple[str, str]] = []
        total = 0
        for path in self._paths(workspace, start):
            if time.monotonic() > deadline:
                raise RunnerError("reading the workspace took the whole step", code="timeout")
            if len(files) >= self.max_files:
                return files, False
            try:
                data = workspace.read_bytes(path, limit=self.max_file_bytes)
                text = data.decode("utf-8")
            except (FileTooLarge, NotAFile, UnicodeDecodeError):
                continue
            except RunnerError as error:
                if error.code == "path_outside_workspace" and path != start:
                    continue  # a symlink met on the walk: skipped, never followed
                raise
            if "\0" in text:
                continue
            total += len(data)
            if total > self.max_total_bytes:
                return files, False
            files.append((path, text))
        return files, True

    @staticmethod
    def _paths(workspace: Workspace, start: str) -> Iterator[str]:
        """Workspace-relative paths of the regular files at or under ``start``, sorted."""
        top = workspace.resolve(start)
        if not top.is_dir():
            yield start  # read_bytes says what is wrong with it, if anything
            return
        for directory, dirnames, filenames in os.walk(top):  # never follows symlinks
            dirnames[:] = sorted(name for name in dirnames if name not in _SKIPPED_DIRS)
            for name in sorted(filenames):
                path = Path(directory, name)
                if not path.is_symlink():
                    yield path.relative_to(workspace.root).as_posix()
