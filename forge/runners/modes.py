"""The sandbox modes shell steps run in (``forge.runners.sandbox`` says what each does),
apart from the sandbox itself so that naming them (the CLI's ``--sandbox`` choices)
imports nothing else."""

from __future__ import annotations

from typing import Literal

__all__ = ["SANDBOX_MODES", "SandboxMode"]

SandboxMode = Literal["bwrap", "rlimits"]
SANDBOX_MODES: tuple[SandboxMode, ...] = ("bwrap", "rlimits")
