"""The launch checklist of seed 003: every step says when it is done, and every step that
changes something says how to undo it.

A step without ``done_when`` draws ``missing_done_when``; a step that may write or reach
outside (a tool call whose side effect is one of ``WRITE_CLASSES``, or an agent step
allowed such a tool) without ``rollback_hint`` draws ``missing_rollback_hint``. Both are
warnings, and each is one diagnostic per code naming every step it concerns, with a fix
hint: a 5,000-step plan without contracts gets two lines, not 10,000 that bury the
warnings about a single step.
"""

from __future__ import annotations

from forge.compiler.diagnostics import Diagnostic, name_list
from forge.compiler.graph import ToolBinding
from forge.plan import Step
from forge.tools import WRITE_CLASSES, ToolSpec

__all__ = ["LaunchChecklist"]

_DONE_WHEN_HINT = (
    "add done_when with required_keys or checks over the step's output (JMESPath), "
    'e.g. done_when: {required_keys: [content], checks: ["length(content) > `0`"]}'
)
_ROLLBACK_HINT = (
    "add rollback_hint: how a person undoes the change if a later step fails "
    '(e.g. "delete board/review.md", "revert the commit", "nothing to undo: a dry run")'
)


class LaunchChecklist:
    """Collects the steps that miss a contract or a rollback hint, in document order."""

    def __init__(self) -> None:
        self._no_done_when: list[str] = []
        self._no_rollback: list[str] = []

    def check(self, step: Step, binding: ToolBinding | None, allowed: tuple[ToolSpec, ...]) -> None:
        if step.done_when is None:
            self._no_done_when.append(step.id)
        if not step.rollback_hint.strip() and _writes(step, binding, allowed):
            self._no_rollback.append(step.id)

    def diagnostics(self) -> list[Diagnostic]:
        found = []
        if self._no_done_when:
            ids = self._no_done_when
            message = (
                f"{_count(ids)} no done_when, so a run can only tell that "
                "its tool did not fail, not that it did its job"
            )
            found.append(Diagnostic.of("missing_done_when", message, ids, hint=_DONE_WHEN_HINT))
        if self._no_rollback:
            ids = self._no_rollback
            message = (
                f"{_count(ids)} a side effect but no rollback_hint: nobody will know how to undo it"
            )
            found.append(Diagnostic.of("missing_rollback_hint", message, ids, hint=_ROLLBACK_HINT))
        return found


def _writes(step: Step, binding: ToolBinding | None, allowed: tuple[ToolSpec, ...]) -> bool:
    if binding is not None:
        return binding.side_effect in WRITE_CLASSES
    if step.tool is not None:  # a tool call that did not bind: its errors say enough
        return False
    return any(tool.side_effect in WRITE_CLASSES for tool in allowed)


def _count(ids: list[str]) -> str:
    if len(ids) == 1:
        return f"step {ids[0]!r} has"
    return f"{len(ids)} steps ({name_list(ids)}) have"
