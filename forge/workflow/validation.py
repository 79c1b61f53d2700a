"""Result contracts: whether a task's output meets what its plan declared.

A handler that returns without raising has only run; its output is accepted when it is
an object holding every required key and passing every check.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["ResultContract", "ValidationResult", "validate_output"]

Check = Callable[[Mapping[str, Any]], object]


@dataclass(frozen=True)
class ResultContract:
    required_keys: tuple[str, ...] = ()
    checks: tuple[Check, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "required_keys", tuple(self.required_keys))
        object.__setattr__(self, "checks", tuple(self.checks))


@dataclass(frozen=True)
class ValidationResult:
    valid: bool
    errors: tuple[str, ...] = ()


def validate_output(output: object, contract: ResultContract) -> ValidationResult:
    """Check ``output`` against ``contract`` without side effects.

    A non-dict gives ``('output must be an object',)`` alone. Otherwise each missing key
    adds ``missing required key: K`` and each falsy check adds ``check N failed``, with
    N counted from 1 in the contract's order. A check that raises counts as failed: it
    usually read a key that is absent, and the missing key is already reported.
    """
    if not isinstance(output, dict):
        return ValidationResult(False, ("output must be an object",))
    errors = [f"missing required key: {key}" for key in contract.required_keys if key not in output]
    for number, check in enumerate(contract.checks, start=1):
        try:
            passed = bool(check(output))
        except Exception:
            passed = False
        if not passed:
            errors.append(f"check {number} failed")
    return ValidationResult(not errors, tuple(errors))
