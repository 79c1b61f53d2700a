"""The Runner port: the one place a tool call turns into a side effect.

The ToolExecutor validates arguments, checks policy and approval, then hands a resolved
``ToolSpec``, its arguments and a ``RunContext`` to a ``Runner`` and gets back a
``RunnerOutcome``: success or failure, the output plan authors check, the artifacts
(logs, diffs) the execution record keeps, and which isolation was in force. Expected
failures (a refusal, a timeout, a non-zero exit) are outcomes with a stable
``error_code``, never exceptions; an exception out of ``run`` is a runner bug.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from forge.tools.spec import ToolSpec

__all__ = ["Artifact", "Isolation", "RunContext", "Runner", "RunnerOutcome"]

Isolation = Literal["none", "workspace", "host-allowlist", "rlimits-only", "bubblewrap"]
"""What confined the call: nothing (in-process), path confinement to the workspace, an
HTTP host allow list, resource limits and an unprivileged uid, or a bubblewrap sandbox."""


@dataclass(frozen=True)
class RunContext:
    """Where and under which terms one attempt of one step runs.

    ``approved`` means the executor checked the step's approval token;
    ``approval_required`` that policy or plan asks for one. A two-phase runner
    (``file_write``) only commits when approval is not required or was given.
    """

    run_id: str
    step_id: str
    workspace: Path
    timeout_s: float
    attempt: int = 1
    approved: bool = False
    approval_required: bool = False

    def __post_init__(self) -> None:
        if self.timeout_s <= 0:
            raise ValueError(f"timeout_s must be positive, got {self.timeout_s}")
        if self.attempt < 1:
            raise ValueError(f"attempt counts from 1, got {self.attempt}")

    @property
    def may_commit(self) -> bool:
        return self.approved or not self.approval_required


@dataclass(frozen=True)
class Artifact:
    """A blob the execution record keeps beside the output: a log, a diff, an image.

    ``truncated`` says the content is only the head of what the tool produced.
    """

    name: str
    media_type: str
    content: bytes
    truncated: bool = False

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")


@dataclass(frozen=True)
class RunnerOutcome:
    """What one call gave back. ``ok`` with ``pending_commit`` means the change was
    prepared (its diff is in the output) and waits for approval; nothing was changed.

    ``notes`` are facts for the record that are not output: truncations, why the
    isolation is weaker than it could be.
    """

    ok: bool
    output: Any = None
    error: str | None = None
    error_code: str | None = None
    exit_code: int | None = None
    artifacts: tuple[Artifact, ...] = ()
    isolation: Isolation = "none"
    pending_commit: bool = False
    tokens: int = 0
    cost: float = 0.0
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.ok and (self.error is not None or self.error_code is not None):
            raise ValueError("a successful outcome carries no error")
        if not self.ok and not (self.error and self.error_code):
            raise ValueError("a failed outcome needs an error message and an error code")
        if self.pending_commit and not self.ok:
            raise ValueError("only a successful outcome can wait for a commit")

    @classmethod
    def success(
        cls,
        output: Any,
        *,
        exit_code: int | None = None,
        artifacts: tuple[Artifact, ...] = (),
        isolation: Isolation = "none",
        pending_commit: bool = False,
        notes: tuple[str, ...] = (),
    ) -> RunnerOutcome:
        return cls(
            True,
            output,
            exit_code=exit_code,
            artifacts=artifacts,
            isolation=isolation,
            pending_commit=pending_commit,
            notes=notes,
        )

    @classmethod
    def failure(
        cls,
        error: str,
        code: str,
        *,
        output: Any = None,
        exit_code: int | None = None,
        artifacts: tuple[Artifact, ...] = (),
        isolation: Isolation = "none",
        notes: tuple[str, ...] = (),
    ) -> RunnerOutcome:
        return cls(
            False,
            output,
            error=error,
            error_code=code,
            exit_code=exit_code,
            artifacts=artifacts,
            isolation=isolation,
            notes=notes,
        )


class Runner(Protocol):
    """Performs one tool call. Synchronous; may be called from several threads at once.

    ``run`` honours ``context.timeout_s`` itself (the executor's outer timeout is a
    backstop), reports every expected failure as a failed ``RunnerOutcome`` with an
    ``error_code``, and raises only on a bug.
    """

    def run(
        self, tool: ToolSpec, args: Mapping[str, Any], context: RunContext
    ) -> RunnerOutcome: ...
