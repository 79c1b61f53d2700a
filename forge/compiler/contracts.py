"""What a step promises: its description and its ``done_when``.

``done_when.checks`` must compile as JMESPath (``invalid_check``, an error: a check that
cannot be evaluated would fail every run). A ``done_when`` with neither required keys nor
checks, or with vague wording, draws ``unverifiable_done_when``. A step with no
``done_when`` at all is the launch checklist's (``forge.compiler.checklist``:
``missing_done_when``, one diagnostic for every such step, so they cannot bury the
warnings that matter). A description that is empty or vague draws ``vague_step``.
"""

from __future__ import annotations

import jmespath
from jmespath.exceptions import JMESPathError

from forge.compiler.diagnostics import Diagnostic
from forge.compiler.vagueness import is_vague_done_when, is_vague_step
from forge.plan import Step

__all__ = ["ContractChecker"]


class ContractChecker:
    """Checks steps one by one, compiling each distinct JMESPath expression once."""

    def __init__(self) -> None:
        self._parsed: dict[str, str] = {}  # expression -> syntax error, "" when valid
        # Lists of checks already found valid: plans repeat the same few.
        self._valid: set[tuple[str, ...]] = set()

    def check(self, step: Step, out: list[Diagnostic]) -> None:
        """Append the diagnostics of ``step``'s description and ``done_when`` to ``out``."""
        if is_vague_step(step.description):
            text = step.description.strip()
            what = f"a vague description ({text!r})" if text else "no description"
            message = f"step {step.id!r} has {what}; say what it produces and from what"
            out.append(Diagnostic.of("vague_step", message, (step.id,)))
        done = step.done_when
        if done is None:
            return
        checks = done.checks
        if checks and checks not in self._valid:
            self._check_syntax(step, checks, out)
        vague = is_vague_done_when(done.description)
        if not vague and (checks or done.required_keys):  # verifiable, and not vague
            return
        problems = []
        if vague:
            problems.append(f"is vague ({done.description.strip()!r})")
        if not done.verifiable:
            problems.append("has no required_keys or checks")
        message = f"done_when of step {step.id!r} {' and '.join(problems)}, so no run can verify it"
        out.append(Diagnostic.of("unverifiable_done_when", message, (step.id,)))

    def _check_syntax(self, step: Step, checks: tuple[str, ...], out: list[Diagnostic]) -> None:
        valid = True
        for number, expression in enumerate(checks, start=1):
            error = self._syntax_error(expression)
            if error:
                valid = False
                message = (
                    f"step {step.id!r}: done_when check {number} {expression!r} is not "
                    f"valid JMESPath: {error}"
                )
                out.append(Diagnostic.of("invalid_check", message, (step.id,)))
        if valid:
            self._valid.add(checks)

    def _syntax_error(self, expression: str) -> str:
        error = self._parsed.get(expression)
        if error is None:
            try:
                jmespath.compile(expression)
                error = ""
            except JMESPathError as exc:
                # jmespath's messages run over several lines, drawing a caret under the
                # expression; the first line holds the reason.
                lines = str(exc).splitlines() or ["syntax error"]
                error = lines[0].removesuffix(" for expression:").rstrip(" ,:")
            self._parsed[expression] = error
        return error
