"""The Runner port's values and the wiring of one runner per built-in tool."""

from __future__ import annotations

from pathlib import Path

import pytest

from forge.runners import BasicRunner, RunContext, RunnerOutcome, ShellRunner, builtin_runners
from forge.tools import BUILTIN_TOOLS


def test_a_failed_outcome_needs_both_a_message_and_a_code():
    with pytest.raises(ValueError, match="error message and an error code"):
        RunnerOutcome(ok=False, error="boom")


def test_a_successful_outcome_cannot_carry_an_error():
    with pytest.raises(ValueError, match="carries no error"):
        RunnerOutcome(ok=True, error_code="timeout")


def test_only_a_successful_outcome_can_wait_for_a_commit():
    with pytest.raises(ValueError, match="wait for a commit"):
        RunnerOutcome(ok=False, error="no", error_code="tool_failed", pending_commit=True)


def test_a_context_refuses_a_timeout_that_is_not_positive():
    with pytest.raises(ValueError, match="timeout_s must be positive"):
        RunContext("run", "step", Path(), timeout_s=0)


def test_a_step_may_commit_when_approval_is_not_required_or_was_given():
    base = RunContext("run", "step", Path(), timeout_s=1)

    assert base.may_commit
    assert not RunContext("r", "s", Path(), 1, approval_required=True).may_commit
    assert RunContext("r", "s", Path(), 1, approval_required=True, approved=True).may_commit


def test_every_built_in_tool_has_a_runner():
    shell = ShellRunner()
    runners = builtin_runners(shell=shell)

    assert sorted(runners) == sorted(spec.name for spec in BUILTIN_TOOLS)
    assert runners["shell"] is shell
    assert isinstance(runners["noop"], BasicRunner)
