"""Result contracts: ``validate_output``, the one rule (SPEC section 2), and plan steps'
``done_when`` evaluated with it.

A handler or tool that returns without failing has only run; its output is accepted when
it is an object holding every required key and passing every check. ``forge.workflow``
hands ``ResultContract``, ``ValidationResult`` and ``validate_output`` out under the seed's
names.

``done_when.checks`` are JMESPath expressions; a check passes when its value is truthy
by JMESPath's own rule (false, null and empty strings, lists and objects are false;
0 is true), which differs from Python's for 0.

A failed check says what it saw: ``check 1 failed: risk_score <= `10` with risk_score =
14.6``. The values are those of the check's operands (the fields and function calls it
compares), evaluated on the output, so nobody has to compare by hand; the verdict keeps
them per check as well (``results``) for the pages. A check that cannot be evaluated on
the output (a function given a value of the wrong type: ``contains(supplier, 'ACME')``
where ``supplier`` is missing) fails the same way, saying why: ``check 1 failed:
contains(supplier, 'ACME') with supplier = null: cannot be evaluated: In function
contains(), invalid type for value: None, ...``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import jmespath

from forge.plan import DoneWhen

__all__ = [
    "ResultContract",
    "ValidationResult",
    "check_output",
    "check_results",
    "validate_output",
    "verdict_data",
]

VALUE_CHARS = 80  # a value shown beside a failed check is cut after this many characters

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


def _jmespath_truthy(value: Any) -> bool:
    return not (value is None or value is False or value in ("", [], {}))


def _check(expression: str) -> Callable[[Mapping[str, Any]], bool]:
    compiled = jmespath.compile(expression)
    return lambda output: _jmespath_truthy(compiled.search(output))


@lru_cache(maxsize=4096)
def _contract(required_keys: tuple[str, ...], checks: tuple[str, ...]) -> ResultContract:
    return ResultContract(required_keys, tuple(_check(expression) for expression in checks))


def check_output(done_when: DoneWhen | None, output: Any) -> ValidationResult:
    """The verdict on ``output``; a step without machine checks is always valid. A failed
    check's error names the check and its operands' values (``check_results``)."""
    if done_when is None or not done_when.verifiable:
        return ValidationResult(True, ())
    verdict = validate_output(output, _contract(done_when.required_keys, done_when.checks))
    if verdict.valid or not isinstance(output, Mapping):
        return verdict
    results = check_results(done_when, output)
    errors = []
    for error in verdict.errors:
        number = _failed_check_number(error)
        if number is None:
            errors.append(error)
            continue
        result = results[number - 1]
        seen = ", ".join(f"{text} = {value}" for text, value in result["values"])
        why = f": cannot be evaluated: {result['error']}" if "error" in result else ""
        errors.append(f"{error}: {result['check']}" + (f" with {seen}" if seen else "") + why)
    return ValidationResult(False, tuple(errors))


def check_results(done_when: DoneWhen | None, output: Any) -> list[dict[str, Any]]:
    """Per check: the expression, whether it passed, and its operands' values as shown
    text (``[[operand, value], ...]``)."""
    if done_when is None or not isinstance(output, Mapping):
        return []
    results = []
    for expression in done_when.checks:
        compiled = _compiled(expression)
        values = [(text, _shown(_search(text, output))) for text in _operands(compiled.parsed)]
        result: dict[str, Any] = {"check": expression, "passed": False, "values": values}
        try:
            result["passed"] = _jmespath_truthy(compiled.search(output))
        except jmespath.exceptions.JMESPathError as error:  # a function given the wrong type
            result["error"] = str(error)
        results.append(result)
    return results


def verdict_data(
    done_when: DoneWhen | None, verdict: ValidationResult, output: Any = None
) -> dict[str, Any]:
    return {
        "valid": verdict.valid,
        "errors": list(verdict.errors),
        "required_keys": list(done_when.required_keys) if done_when else [],
        "checks": list(done_when.checks) if done_when else [],
        "results": [
            {**result, "values": [list(pair) for pair in result["values"]]}
            for result in check_results(done_when, output)
        ],
    }


@lru_cache(maxsize=4096)
def _compiled(expression: str) -> Any:
    return jmespath.compile(expression)


def _search(text: str, output: Mapping[str, Any]) -> Any:
    try:
        return _compiled(text).search(output)
    except jmespath.exceptions.JMESPathError as exc:  # a function given the wrong type
        return f"<{type(exc).__name__}>"


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= VALUE_CHARS else text[: VALUE_CHARS - 1] + "…"


def _failed_check_number(error: str) -> int | None:
    words = error.split()
    if len(words) == 3 and words[0] == "check" and words[2] == "failed" and words[1].isdigit():
        return int(words[1])
    return None


def _operands(node: Mapping[str, Any]) -> list[str]:
    """The parts of a check worth showing the value of: what comparisons compare, the
    arguments of functions, a lone field; never literals, each once, in order."""
    found: dict[str, None] = {}
    _collect(node, found, top=True)
    return list(found)


def _collect(node: Mapping[str, Any], found: dict[str, None], *, top: bool = False) -> None:
    kind = node.get("type")
    children = node.get("children", [])
    if kind in ("and_expression", "or_expression", "not_expression"):
        for child in children:
            _collect(child, found, top=True)
    elif kind == "comparator":
        for child in children:
            _add(child, found)
            if child.get("type") == "function_expression":
                for argument in child.get("children", []):
                    _add(argument, found)
    elif kind == "function_expression":
        for argument in children:
            _add(argument, found)
    elif top:
        _add(node, found)


def _add(node: Mapping[str, Any], found: dict[str, None]) -> None:
    if node.get("type") == "literal":
        return
    text = _render(node)
    if text is not None:
        found[text] = None


def _render(node: Mapping[str, Any]) -> str | None:
    """JMESPath text of the simple expressions a check compares; None for the rest."""
    kind = node.get("type")
    children = node.get("children", [])
    if kind == "field":
        name = str(node["value"])
        return name if name.isidentifier() else json.dumps(name)
    if kind in ("current", "identity"):
        return "@"
    if kind == "literal":
        value = node["value"]
        return f"'{value}'" if isinstance(value, str) else f"`{json.dumps(value)}`"
    if kind == "subexpression":
        parts = [_render(child) for child in children]
        return None if None in parts else ".".join(str(part) for part in parts)
    if kind == "index_expression" and len(children) == 2 and children[1].get("type") == "index":
        base = _render(children[0])
        return None if base is None else f"{base}[{children[1]['value']}]"
    if kind == "function_expression":
        arguments = [_render(child) for child in children]
        if None in arguments:
            return None
        return f"{node['value']}({', '.join(str(argument) for argument in arguments)})"
    return None
