"""An evaluation suite (``forge.eval/v1``): goals for a planner, the tool outcomes each
case scripts, an optional mid-run change of requirement, and what a good run ends with.

A suite is YAML (or JSON), parsed safely and bounded as plan documents are
(``forge.plan.formats.yaml_safe``), checked against ``SUITE_SCHEMA`` and then for what a
schema cannot say (unique case ids, scripted tools that exist, a valid policy). Every
refusal is a ``SuiteError`` with a stable ``code`` and the place it concerns (``path``,
e.g. ``cases[2].outcomes[0]``), and nothing is half loaded. docs/evaluation.md describes
the format.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from jsonschema import Draft202012Validator

from forge.errors import ForgeError, PlanDocumentError
from forge.plan import ImportLimits
from forge.plan.formats.yaml_safe import parse_yaml
from forge.tools import DEFAULT_POLICY, SIDE_EFFECTS, Policy, PolicyError, ToolSpec
from forge.tools.builtins import BUILTIN_TOOLS

__all__ = [
    "SCENARIOS",
    "SUITE_SCHEMA",
    "Case",
    "CallPattern",
    "Expectations",
    "RequirementChange",
    "ScriptedResult",
    "Suite",
    "SuiteError",
    "ToolScript",
    "load_suite",
    "read_suite",
]

SUITE_VERSION = "forge.eval/v1"
# Seed 003 section 10: an evaluation set covers these five; "other" is anything else.
SCENARIOS = (
    "normal_completion",
    "tool_failure",
    "replan",
    "requirement_change",
    "permission_refusal",
    "other",
)
_LIMITS = ImportLimits(max_bytes=2 * 1024 * 1024, max_steps=2000, max_depth=32)
_ID = {"type": "string", "pattern": r"^[A-Za-z0-9_.-]{1,64}$"}
_TEXT = {"type": "string", "minLength": 1, "maxLength": 4000}
_PATTERN = {
    "type": "object",
    "properties": {"tool": {"type": "string", "minLength": 1}, "args": {"type": "object"}},
    "required": ["tool"],
    "additionalProperties": False,
}
_RESULT = {
    "type": "object",
    "oneOf": [{"required": ["ok"]}, {"required": ["fail"]}, {"required": ["refuse"]}],
    "properties": {
        "ok": {},
        "fail": _TEXT,
        "code": _ID,
        "refuse": _TEXT,
        "tokens": {"type": "integer", "minimum": 0},
        "cost": {"type": "number", "minimum": 0},
    },
    "additionalProperties": False,
}
SUITE_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["schema", "name", "cases"],
    "additionalProperties": False,
    "properties": {
        "schema": {"const": SUITE_VERSION},
        "name": _ID,
        "description": {"type": "string"},
        "max_attempts": {"type": "integer", "minimum": 1, "maximum": 10},
        "policy": {"type": "object"},
        "tools": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "description", "permission_scope"],
                "additionalProperties": False,
                "properties": {
                    "name": {"type": "string", "pattern": r"^[A-Za-z0-9_.-]{1,128}$"},
                    "description": _TEXT,
                    "permission_scope": _ID,
                    "side_effect": {"enum": list(SIDE_EFFECTS)},
                    "idempotent": {"type": "boolean"},
                    "risk": {"enum": ["low", "medium", "high"]},
                    "args_schema": {"type": "object"},
                    "output_schema": {"type": "object"},
                },
            },
        },
        "cases": {
            "type": "array",
            "minItems": 1,
            "maxItems": 500,
            "items": {
                "type": "object",
                "required": ["id", "scenario", "goal"],
                "additionalProperties": False,
                "properties": {
                    "id": _ID,
                    "scenario": {"enum": list(SCENARIOS)},
                    "goal": _TEXT,
                    "constraints": {"type": "array", "items": _TEXT},
                    "policy": {"type": "object"},
                    "outcomes": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["tool", "results"],
                            "additionalProperties": False,
                            "properties": {
                                "tool": {"type": "string", "minLength": 1},
                                "step": _ID,
                                "args": {"type": "object"},
                                "results": {"type": "array", "minItems": 1, "items": _RESULT},
                            },
                        },
                    },
                    "change": {
                        "type": "object",
                        "required": ["at", "requirement"],
                        "additionalProperties": False,
                        "properties": {"at": _PATTERN, "requirement": _TEXT},
                    },
                    "expect": {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            "status": {
                                "enum": [
                                    "succeeded",
                                    "failed",
                                    "needs_replan",
                                    "awaiting_approval",
                                    "budget_exhausted",
                                    "not_compiled",
                                    "not_approved",
                                ]
                            },  # fmt: skip
                            "deliverable": _PATTERN,
                            "must_call": {"type": "array", "items": _PATTERN},
                            "must_not_call": {"type": "array", "items": _PATTERN},
                            "max_tokens": {"type": "integer", "minimum": 0},
                            "max_cost": {"type": "number", "minimum": 0},
                            "max_seconds": {"type": "number", "exclusiveMinimum": 0},
                        },
                    },
                },
            },
        },
    },
}
_VALIDATOR = Draft202012Validator(SUITE_SCHEMA)


class SuiteError(ForgeError, ValueError):
    """A suite that cannot be used. ``code``: ``suite_unreadable``, ``suite_too_large``,
    ``suite_not_yaml``, ``suite_invalid``, ``duplicate_case``, ``unknown_tool`` or
    ``invalid_policy``; ``path`` names the place in the suite."""

    code = "suite_invalid"

    def __init__(self, message: str, *, code: str | None = None, path: str = "") -> None:
        super().__init__(f"{path}: {message}" if path else message, code=code)
        self.path = path


@dataclass(frozen=True)
class CallPattern:
    """Matches a call of ``tool`` whose arguments include every key of ``args`` with the
    same value (a subset: keys not named may have any value)."""

    tool: str
    args: Mapping[str, Any] = field(default_factory=dict)

    def matches(self, tool: str, args: Mapping[str, Any]) -> bool:
        return tool == self.tool and all(
            key in args and args[key] == value for key, value in self.args.items()
        )

    def to_data(self) -> dict[str, Any]:
        return {"tool": self.tool, **({"args": dict(self.args)} if self.args else {})}


@dataclass(frozen=True)
class ScriptedResult:
    """One answer of a scripted tool: ``ok`` with ``output``, a failure with ``error``
    and ``code``, or a permission refusal (``code`` ``permission_denied``)."""

    kind: Literal["ok", "fail", "refuse"]
    output: Any = None
    error: str = ""
    code: str = ""
    tokens: int = 0
    cost: float = 0.0


@dataclass(frozen=True)
class ToolScript:
    """The answers calls matching ``pattern`` (and ``step``, when given) get, in order;
    the last answer repeats for every further call."""

    pattern: CallPattern
    results: tuple[ScriptedResult, ...]
    step: str | None = None


@dataclass(frozen=True)
class RequirementChange:
    """The person changes the requirement when the first call matching ``at`` waits for
    their approval: they reject it with ``requirement`` as the comment."""

    at: CallPattern
    requirement: str


@dataclass(frozen=True)
class Expectations:
    status: str = "succeeded"
    deliverable: CallPattern | None = None
    must_call: tuple[CallPattern, ...] = ()
    must_not_call: tuple[CallPattern, ...] = ()
    max_tokens: int | None = None
    max_cost: float | None = None
    max_seconds: float | None = None


@dataclass(frozen=True)
class Case:
    id: str
    scenario: str
    goal: str
    constraints: tuple[str, ...] = ()
    policy: Policy = DEFAULT_POLICY
    outcomes: tuple[ToolScript, ...] = ()
    change: RequirementChange | None = None
    expect: Expectations = field(default_factory=Expectations)

    @property
    def task(self) -> str:
        """What the planner is asked: the goal, then each constraint."""
        if not self.constraints:
            return self.goal
        return self.goal + "\nConstraints:\n" + "\n".join(f"- {c}" for c in self.constraints)


@dataclass(frozen=True)
class Suite:
    name: str
    cases: tuple[Case, ...]
    tools: tuple[ToolSpec, ...] = ()  # besides the built-ins
    max_attempts: int = 3  # answers per version until one compiles
    description: str = ""

    def case(self, case_id: str) -> Case:
        for case in self.cases:
            if case.id == case_id:
                return case
        raise KeyError(case_id)


def read_suite(path: Path) -> Suite:
    """The suite in file ``path``; raises ``SuiteError`` (``suite_unreadable`` for a file
    that cannot be read)."""
    try:
        with path.open("rb") as stream:  # one byte past the limit, never the whole file
            source = stream.read(_LIMITS.max_bytes + 1)
    except OSError as exc:
        raise SuiteError(
            f"cannot read suite {path}: {exc.strerror or exc}", code="suite_unreadable"
        ) from None
    return load_suite(source)


def load_suite(source: bytes | str) -> Suite:
    """A suite from its YAML or JSON text; raises ``SuiteError``."""
    raw = source.encode() if isinstance(source, str) else source
    if len(raw) > _LIMITS.max_bytes:
        raise SuiteError(f"the suite is over {_LIMITS.max_bytes} bytes", code="suite_too_large")
    try:
        data = parse_yaml(raw.decode("utf-8"), _LIMITS)
    except UnicodeDecodeError:
        raise SuiteError("the suite is not UTF-8 text", code="suite_not_yaml") from None
    except PlanDocumentError as exc:
        raise SuiteError(f"{exc.message} [{exc.code}]", code="suite_not_yaml") from None
    errors = sorted(_VALIDATOR.iter_errors(data), key=lambda e: (list(e.absolute_path), e.message))
    if errors:
        first = errors[0]
        raise SuiteError(_schema_message(first), path=_path(first.absolute_path))
    assert isinstance(data, dict)
    return _suite(data)


def _schema_message(error: Any) -> str:
    if error.validator == "oneOf" and isinstance(error.instance, dict):
        return "give exactly one of ok, fail or refuse"
    message = str(error.message)
    if error.validator == "additionalProperties":
        return message.replace("Additional properties", "unknown field(s)")
    return message


def _path(parts: Any) -> str:
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _suite(data: dict[str, Any]) -> Suite:
    tools = tuple(_tool(item, f"tools[{i}]") for i, item in enumerate(data.get("tools", ())))
    known = {spec.name for spec in BUILTIN_TOOLS}
    for index, spec in enumerate(tools):
        if spec.name in known:
            raise SuiteError(
                f"tool {spec.name!r} is already defined", code="duplicate_tool",
                path=f"tools[{index}].name",
            )  # fmt: skip
        known.add(spec.name)
    default_policy = _policy(data.get("policy"), "policy", DEFAULT_POLICY)
    cases: list[Case] = []
    seen: set[str] = set()
    for index, item in enumerate(data["cases"]):
        where = f"cases[{index}]"
        if item["id"] in seen:
            raise SuiteError(
                f"case id {item['id']!r} is used twice", code="duplicate_case", path=f"{where}.id"
            )
        seen.add(item["id"])
        cases.append(_case(item, where, known, default_policy))
    return Suite(
        name=data["name"],
        cases=tuple(cases),
        tools=tools,
        max_attempts=int(data.get("max_attempts", 3)),
        description=str(data.get("description", "")),
    )


def _tool(item: Mapping[str, Any], where: str) -> ToolSpec:
    from forge.tools.registry import ToolRegistry  # its schema check, at load time

    spec = ToolSpec(
        name=item["name"],
        description=item["description"],
        args_schema=item.get("args_schema", {"type": "object"}),
        permission_scope=item["permission_scope"],
        side_effect=item.get("side_effect", "none"),
        idempotent=item.get("idempotent", True),
        risk=item.get("risk", "low"),
        source="suite",
        output_schema=item.get("output_schema"),
    )
    try:
        ToolRegistry([spec])
    except Exception as exc:  # fastjsonschema refuses a schema it cannot compile
        raise SuiteError(
            f"args_schema is not a usable JSON Schema: {exc}", path=f"{where}.args_schema"
        ) from None
    return spec


def _policy(data: Any, where: str, default: Policy) -> Policy:
    if data is None:
        return default
    try:
        return Policy.from_data(data)
    except PolicyError as exc:
        raise SuiteError(exc.message, code="invalid_policy", path=where) from None


def _pattern(data: Mapping[str, Any], where: str, known: set[str]) -> CallPattern:
    if data["tool"] not in known:
        raise SuiteError(
            f"unknown tool {data['tool']!r}: neither a built-in nor one of the suite's tools",
            code="unknown_tool",
            path=f"{where}.tool",
        )
    return CallPattern(data["tool"], dict(data.get("args", {})))


def _case(item: Mapping[str, Any], where: str, known: set[str], policy: Policy) -> Case:
    outcomes = []
    for index, script in enumerate(item.get("outcomes", ())):
        at = f"{where}.outcomes[{index}]"
        outcomes.append(
            ToolScript(
                _pattern(script, at, known),
                tuple(_result(result) for result in script["results"]),
                script.get("step"),
            )
        )
    change = item.get("change")
    expect = item.get("expect", {})
    at = f"{where}.expect"
    return Case(
        id=item["id"],
        scenario=item["scenario"],
        goal=item["goal"],
        constraints=tuple(item.get("constraints", ())),
        policy=_policy(item.get("policy"), f"{where}.policy", policy),
        outcomes=tuple(outcomes),
        change=None
        if change is None
        else RequirementChange(
            _pattern(change["at"], f"{where}.change.at", known), change["requirement"]
        ),
        expect=Expectations(
            status=expect.get("status", "succeeded"),
            deliverable=(
                _pattern(expect["deliverable"], f"{at}.deliverable", known)
                if "deliverable" in expect
                else None
            ),
            must_call=tuple(
                _pattern(p, f"{at}.must_call[{i}]", known)
                for i, p in enumerate(expect.get("must_call", ()))
            ),
            must_not_call=tuple(
                _pattern(p, f"{at}.must_not_call[{i}]", known)
                for i, p in enumerate(expect.get("must_not_call", ()))
            ),
            max_tokens=expect.get("max_tokens"),
            max_cost=expect.get("max_cost"),
            max_seconds=expect.get("max_seconds"),
        ),
    )


def _result(data: Mapping[str, Any]) -> ScriptedResult:
    tokens, cost = int(data.get("tokens", 0)), float(data.get("cost", 0.0))
    if "ok" in data:
        return ScriptedResult("ok", output=data["ok"], tokens=tokens, cost=cost)
    kind: Literal["fail", "refuse"] = "fail" if "fail" in data else "refuse"
    default = "tool_failed" if kind == "fail" else "permission_denied"
    return ScriptedResult(
        kind, error=str(data[kind]), code=str(data.get("code", default)), tokens=tokens, cost=cost
    )
