"""Result contracts of plan steps: ``done_when`` evaluated with ``validate_output``.

``done_when.checks`` are JMESPath expressions; a check passes when its value is truthy
by JMESPath's own rule (false, null and empty strings, lists and objects are false;
0 is true), which differs from Python's for 0.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

import jmespath

from forge.plan import DoneWhen
from forge.workflow import ResultContract, ValidationResult, validate_output

__all__ = ["check_output", "verdict_data"]


def _jmespath_truthy(value: Any) -> bool:
    return not (value is None or value is False or value in ("", [], {}))


def _check(expression: str) -> Callable[[Mapping[str, Any]], bool]:
    compiled = jmespath.compile(expression)
    return lambda output: _jmespath_truthy(compiled.search(output))


@lru_cache(maxsize=4096)
def _contract(required_keys: tuple[str, ...], checks: tuple[str, ...]) -> ResultContract:
    return ResultContract(required_keys, tuple(_check(expression) for expression in checks))


def check_output(done_when: DoneWhen | None, output: Any) -> ValidationResult:
    """The verdict on ``output``; a step without machine checks is always valid."""
    if done_when is None or not done_when.verifiable:
        return ValidationResult(True, ())
    return validate_output(output, _contract(done_when.required_keys, done_when.checks))


def verdict_data(done_when: DoneWhen | None, verdict: ValidationResult) -> dict[str, Any]:
    return {
        "valid": verdict.valid,
        "errors": list(verdict.errors),
        "required_keys": list(done_when.required_keys) if done_when else [],
        "checks": list(done_when.checks) if done_when else [],
    }
