"""The ``file_read`` and ``file_write`` runners, confined to the run's workspace.

``file_write`` works in two phases. The preview computes a unified diff of the change
(``preview`` is what an approver sees before the call runs; the executor compares it again
at commit) and records it as an artifact; the commit writes the file atomically. ``run`` commits
only when the step needs no approval or its approval was checked
(``RunContext.may_commit``); otherwise it changes nothing and answers
``pending_commit`` with the diff, so the approver sees exactly what will change.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from forge.runners.base import Artifact, RunContext, RunnerOutcome
from forge.runners.errors import FileTooLarge, NotText, RunnerError
from forge.runners.preview import CallPreview
from forge.runners.workspace import Workspace
from forge.tools.spec import ToolSpec

__all__ = ["FilePreview", "FileReadRunner", "FileWriteRunner", "unified_diff"]

DEFAULT_MAX_BYTES = 1 << 20


class FileReadRunner:
    def __init__(self, *, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.max_bytes = max_bytes

    def run(self, tool: ToolSpec, args: Mapping[str, Any], context: RunContext) -> RunnerOutcome:
        try:
            workspace = Workspace(context.workspace)
            path = workspace.relative(str(args["path"]))
            content = _decode(workspace.read_bytes(path, limit=self.max_bytes), path)
        except RunnerError as error:
            return RunnerOutcome.failure(str(error), error.code, isolation="workspace")
        return RunnerOutcome.success({"path": path, "content": content}, isolation="workspace")


@dataclass(frozen=True)
class FilePreview:
    """The change a ``file_write`` call would make: the new content and its diff."""

    path: str
    content: bytes
    diff: str
    changed: bool

    @property
    def artifact(self) -> Artifact:
        return Artifact("diff", "text/x-diff", self.diff.encode())


class FileWriteRunner:
    def __init__(self, *, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.max_bytes = max_bytes

    def prepare(self, args: Mapping[str, Any], context: RunContext) -> FilePreview:
        """The diff of writing ``args["content"]`` to ``args["path"]``; changes nothing.

        Raises ``RunnerError`` (``path_outside_workspace``, ``file_too_large``, ...).
        """
        workspace = Workspace(context.workspace)
        path = workspace.relative(str(args["path"]))
        content = str(args["content"]).encode()
        if len(content) > self.max_bytes:
            raise FileTooLarge(f"content for {path!r} is over the {self.max_bytes} byte limit")
        old = workspace.read_existing(path, limit=self.max_bytes)
        # A binary file being replaced still gets a readable, if lossy, diff.
        old_text = None if old is None else old.decode("utf-8", errors="replace")
        return FilePreview(
            path=path,
            content=content,
            diff=unified_diff(path, old_text, content.decode()),
            changed=old != content,
        )

    def preview(self, tool: ToolSpec, args: Mapping[str, Any], context: RunContext) -> CallPreview:
        """The unified diff the approver sees; raises ``RunnerError`` as ``prepare``."""
        prepared = self.prepare(args, context)
        if not prepared.changed:
            return CallPreview("file_write", f"{prepared.path}: no change", prepared.diff)
        lines = prepared.diff.splitlines()
        added = sum(1 for line in lines if line.startswith("+") and not line.startswith("+++"))
        removed = sum(1 for line in lines if line.startswith("-") and not line.startswith("---"))
        return CallPreview(
            "file_write", f"write {prepared.path} (+{added} -{removed})", prepared.diff
        )

    def run(self, tool: ToolSpec, args: Mapping[str, Any], context: RunContext) -> RunnerOutcome:
        try:
            preview = self.prepare(args, context)
            committed = context.may_commit
            if committed and preview.changed:
                Workspace(context.workspace).write_atomic(preview.path, preview.content)
        except RunnerError as error:
            return RunnerOutcome.failure(str(error), error.code, isolation="workspace")
        return RunnerOutcome.success(
            {"path": preview.path, "diff": preview.diff, "committed": committed},
            artifacts=(preview.artifact,),
            isolation="workspace",
            pending_commit=not committed,
        )


def unified_diff(path: str, old: str | None, new: str) -> str:
    """A ``git apply``-able unified diff; ``old`` is ``None`` for a file not there yet."""
    lines = difflib.unified_diff(
        [] if old is None else old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile="/dev/null" if old is None else f"a/{path}",
        tofile=f"b/{path}",
    )
    return "".join(
        line if line.endswith("\n") else f"{line}\n\\ No newline at end of file\n" for line in lines
    )


def _decode(data: bytes, path: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotText(
            f"{path!r} is not UTF-8 text: byte 0x{data[exc.start]:02x} at offset {exc.start}"
        ) from None
