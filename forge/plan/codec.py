"""Plain data (what JSON and YAML give) to ``PlanDocument`` and back.

Reading is strict: an unknown field, a wrong type or an invalid id is refused with the
path of the offending value, so nothing a user wrote is silently dropped. Data is first
read the fast way (``forge.plan.typed``: msgspec checks types in C); what it cannot
vouch for, every refusal among it, is read here by hand, which says what is wrong.
Writing omits fields that hold their defaults, except ``depends_on``, which every step
states.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, cast

import msgspec
from msgspec import UNSET

from forge.errors import PlanDocumentError
from forge.plan.document import (
    REPLAN_MODES,
    RISK_LEVELS,
    SCHEMA,
    Budget,
    DoneWhen,
    Estimate,
    Milestone,
    PlanDocument,
    ReplanMode,
    RiskLevel,
    Step,
)
from forge.plan.jsontext import canonical_json, encode_plain, indented_json, json_number
from forge.plan.limits import (
    DEFAULT_LIMITS,
    QUANTITY_LIMIT,
    ImportLimits,
    check_id,
    check_shape,
)
from forge.plan.typed import read

__all__ = ["canonical_json", "content_hash", "from_data", "indented_json", "to_data"]

_PLAN_FIELDS = {
    "schema", "goal", "deliverable", "risk_level", "requires_approval_before",
    "budget", "max_replans", "replan", "steps", "milestones",
}  # fmt: skip
_MILESTONE_FIELDS = {"id", "title", "steps", "review"}
_STEP_FIELDS = {
    "id", "description", "depends_on", "tool", "args", "tools_allowed", "done_when",
    "timeout_s", "retries", "rollback_hint", "estimate",
}  # fmt: skip


def _fail(path: str, message: str, code: str = "invalid_document") -> PlanDocumentError:
    return PlanDocumentError(f"{path}: {message}" if path else message, code=code, path=path)


def _mapping(value: object, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _fail(path, f"must be an object, not {_kind(value)}")
    for key in value:
        if not isinstance(key, str):
            raise _fail(path, f"keys must be strings, not {key!r}")
    return cast(Mapping[str, Any], value)


def _known(data: Mapping[str, Any], allowed: set[str], path: str) -> None:
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise _fail(path, f"unknown field(s) {', '.join(map(repr, unknown))}")


def _str(value: object, path: str) -> str:
    if not isinstance(value, str):
        raise _fail(path, f"must be a string, not {_kind(value)}")
    return value


def _str_list(value: object, path: str) -> tuple[str, ...]:
    if not isinstance(value, list | tuple):
        raise _fail(path, f"must be a list of strings, not {_kind(value)}")
    return tuple(_str(item, f"{path}[{index}]") for index, item in enumerate(value))


def _int(value: object, path: str, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise _fail(path, f"must be an integer >= {minimum}, not {value!r}")
    _at_most_limit(value, path)
    return value


def _number(value: object, path: str, *, positive: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise _fail(path, f"must be a number, not {value!r}")
    if value < 0 or (positive and value == 0):
        raise _fail(path, f"must be {'greater than 0' if positive else '>= 0'}, not {value!r}")
    _at_most_limit(value, path)
    return value


def _at_most_limit(value: float, path: str) -> None:
    if value > QUANTITY_LIMIT:
        raise _fail(path, f"must be at most {QUANTITY_LIMIT:,}, not {value!r}")


def _given(data: Mapping[str, Any], key: str, default: object) -> object:
    """``data[key]``, or ``default`` when it is missing or null.

    Only null means "not given": ``value or default`` would also swallow a wrongly typed
    falsy value such as ``args: []`` or ``depends_on: ""`` instead of refusing it.
    """
    value = data.get(key)
    return default if value is None else value


def _kind(value: object) -> str:
    return {dict: "an object", list: "a list", str: "a string", type(None): "null"}.get(
        type(value), type(value).__name__
    )


def from_data(data: object, limits: ImportLimits = DEFAULT_LIMITS) -> PlanDocument:
    """Build a ``PlanDocument`` from parsed JSON or YAML, refusing anything malformed."""
    document = read(data, limits)
    return read_by_hand(data, limits) if document is None else document


def read_by_hand(data: object, limits: ImportLimits = DEFAULT_LIMITS) -> PlanDocument:
    """``from_data`` checking each field in Python: the way that names what is wrong."""
    steps = data.get("steps") if isinstance(data, dict) else None
    if isinstance(steps, list):  # a long plan is refused for its length (ImportLimits)
        limits.check_step_count(len(steps))
    check_shape(data, limits)
    plan = _mapping(data, "")
    _known(plan, _PLAN_FIELDS, "")
    schema = _str(plan.get("schema", SCHEMA), "schema")
    if schema != SCHEMA:
        raise _fail("schema", f"unsupported schema {schema!r}; expected {SCHEMA!r}",
                    code="unsupported_schema")  # fmt: skip
    if "goal" not in plan:
        raise _fail("goal", "is required")
    raw_steps = plan.get("steps", [])
    if not isinstance(raw_steps, list):
        raise _fail("steps", f"must be a list, not {_kind(raw_steps)}")
    limits.check_step_count(len(raw_steps))
    deliverable = plan.get("deliverable")
    risk = plan.get("risk_level", "low")
    if risk not in RISK_LEVELS:
        raise _fail("risk_level", f"must be one of {', '.join(RISK_LEVELS)}, not {risk!r}")
    return PlanDocument(
        schema=schema,
        goal=_str(plan["goal"], "goal"),
        deliverable=None if deliverable is None else check_id(deliverable, "deliverable"),
        risk_level=cast(RiskLevel, risk),
        requires_approval_before=_str_list(
            plan.get("requires_approval_before", []), "requires_approval_before"
        ),
        budget=_budget(plan.get("budget"), "budget"),
        max_replans=_int(plan.get("max_replans", 3), "max_replans"),
        replan=_replan_mode(plan.get("replan", "manual")),
        steps=tuple(_step(raw, f"steps[{index}]") for index, raw in enumerate(raw_steps)),
        milestones=_milestones(plan.get("milestones"), "milestones"),
    )


def _replan_mode(value: object) -> ReplanMode:
    for mode in REPLAN_MODES:
        if value == mode:
            return mode
    raise _fail("replan", f"must be one of {', '.join(REPLAN_MODES)}, not {value!r}")


def _milestones(value: object, path: str) -> tuple[Milestone, ...]:
    """The milestones' shape; which steps they name, and in what order, the compiler
    checks (``forge.compiler.milestones``), so a draft with a typo still loads."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise _fail(path, f"must be a list, not {_kind(value)}")
    found = []
    for index, raw in enumerate(value):
        where = f"{path}[{index}]"
        data = _mapping(raw, where)
        _known(data, _MILESTONE_FIELDS, where)
        if "id" not in data:
            raise _fail(f"{where}.id", "is required")
        review = data.get("review", False)
        if not isinstance(review, bool):
            raise _fail(f"{where}.review", f"must be true or false, not {review!r}")
        steps = _str_list(_given(data, "steps", []), f"{where}.steps")
        for number, step_id in enumerate(steps):
            check_id(step_id, f"{where}.steps[{number}]")
        found.append(
            Milestone(
                id=check_id(data["id"], f"{where}.id"),
                title=_str(data.get("title", ""), f"{where}.title"),
                steps=steps,
                review=review,
            )
        )
    return tuple(found)


def _budget(value: object, path: str) -> Budget:
    if value is None:
        return Budget()
    data = _mapping(value, path)
    _known(data, {"max_steps", "max_tokens", "max_cost"}, path)

    def read(key: str, reader: Any) -> Any:
        return None if data.get(key) is None else reader(data[key], f"{path}.{key}")

    return Budget(read("max_steps", _int), read("max_tokens", _int), read("max_cost", _number))


def _step(value: object, path: str) -> Step:
    data = _mapping(value, path)
    _known(data, _STEP_FIELDS, path)
    if "id" not in data:
        raise _fail(f"{path}.id", "is required")
    step_id = check_id(data["id"], f"{path}.id")
    path = f"steps.{step_id}"
    depends_on = _str_list(_given(data, "depends_on", []), f"{path}.depends_on")
    for index, dep in enumerate(depends_on):
        check_id(dep, f"{path}.depends_on[{index}]")
    tool = data.get("tool")
    timeout = data.get("timeout_s")
    return Step(
        id=step_id,
        description=_str(data.get("description", ""), f"{path}.description"),
        depends_on=depends_on,
        tool=None if tool is None else _str(tool, f"{path}.tool"),
        args=dict(_mapping(_given(data, "args", {}), f"{path}.args")),
        tools_allowed=_str_list(_given(data, "tools_allowed", []), f"{path}.tools_allowed"),
        done_when=_done_when(data.get("done_when"), f"{path}.done_when"),
        timeout_s=None if timeout is None else _number(timeout, f"{path}.timeout_s", positive=True),
        retries=_int(data.get("retries", 0), f"{path}.retries"),
        rollback_hint=_str(data.get("rollback_hint", ""), f"{path}.rollback_hint"),
        estimate=_estimate(data.get("estimate"), f"{path}.estimate"),
    )


def _done_when(value: object, path: str) -> DoneWhen | None:
    if value is None:
        return None
    if isinstance(value, str):
        return DoneWhen(description=value)
    data = _mapping(value, path)
    _known(data, {"description", "required_keys", "checks"}, path)
    return DoneWhen(
        description=_str(data.get("description", ""), f"{path}.description"),
        required_keys=_str_list(_given(data, "required_keys", []), f"{path}.required_keys"),
        checks=_str_list(_given(data, "checks", []), f"{path}.checks"),
    )


def _estimate(value: object, path: str) -> Estimate | None:
    if value is None:
        return None
    data = _mapping(value, path)
    _known(data, {"tokens", "cost", "seconds"}, path)
    seconds = data.get("seconds")
    return Estimate(
        tokens=_int(data.get("tokens", 0), f"{path}.tokens"),
        cost=_number(data.get("cost", 0.0), f"{path}.cost"),
        seconds=None if seconds is None else _number(seconds, f"{path}.seconds"),
    )


def to_data(document: PlanDocument) -> dict[str, Any]:
    """Plain data for ``document``: the inverse of ``from_data``."""
    data: dict[str, Any] = {"schema": document.schema, "goal": document.goal}
    if document.deliverable is not None:
        data["deliverable"] = document.deliverable
    data["risk_level"] = document.risk_level
    if document.requires_approval_before:
        data["requires_approval_before"] = list(document.requires_approval_before)
    budget = {k: v for k, v in vars(document.budget).items() if v is not None}
    if budget:
        data["budget"] = budget
    data["max_replans"] = document.max_replans
    if document.replan != "manual":  # left out by default: older documents keep their hash
        data["replan"] = document.replan
    data["steps"] = [_step_data(step) for step in document.steps]
    if document.milestones:  # written only when given, so older documents keep their hash
        data["milestones"] = [_milestone_data(milestone) for milestone in document.milestones]
    return data


def _milestone_data(milestone: Milestone) -> dict[str, Any]:
    data: dict[str, Any] = {"id": milestone.id}
    if milestone.title:
        data["title"] = milestone.title
    data["steps"] = list(milestone.steps)
    if milestone.review:
        data["review"] = True
    return data


def _step_data(step: Step) -> dict[str, Any]:
    data: dict[str, Any] = {"id": step.id}
    if step.description:
        data["description"] = step.description
    data["depends_on"] = list(step.depends_on)
    if step.tool is not None:
        data["tool"] = step.tool
    if step.args:
        data["args"] = dict(step.args)
    if step.tools_allowed:
        data["tools_allowed"] = list(step.tools_allowed)
    if step.done_when is not None:
        done = step.done_when
        if done.verifiable:
            data["done_when"] = {"description": done.description} if done.description else {}
            if done.required_keys:
                data["done_when"]["required_keys"] = list(done.required_keys)
            if done.checks:
                data["done_when"]["checks"] = list(done.checks)
        else:
            data["done_when"] = done.description
    if step.timeout_s is not None:
        data["timeout_s"] = step.timeout_s
    if step.retries:
        data["retries"] = step.retries
    if step.rollback_hint:
        data["rollback_hint"] = step.rollback_hint
    if step.estimate is not None:
        data["estimate"] = {"tokens": step.estimate.tokens, "cost": step.estimate.cost}
        if step.estimate.seconds is not None:
            data["estimate"]["seconds"] = step.estimate.seconds
    return data


_NONE: Mapping[int, str] = MappingProxyType({})


def content_hash(document: PlanDocument, canonical_args: Mapping[int, str] = _NONE) -> str:
    """SHA-256 of the document's canonical JSON: equal documents, equal hashes.

    The text is ``canonical_json(to_data(document))``, written by msgspec from data built
    for it with the keys in canonical order (``_hashed``): hashing a 10,000-step plan the
    standard library's way took longer than a topological sort of it. Whatever msgspec
    cannot write is written the standard library's way, which raises what it raised.
    ``canonical_args`` may give steps' arguments as ``canonical_json`` wrote them, by
    the arguments' id (the compiler has written them)."""
    try:
        text = encode_plain(_hashed(document, canonical_args))
    except (msgspec.MsgspecError, TypeError, ValueError):
        text = canonical_json(to_data(document)).encode()
    return hashlib.sha256(text).hexdigest()


def _hashed(document: PlanDocument, canonical_args: Mapping[int, str]) -> dict[str, Any]:
    """``to_data(document)`` with its keys sorted, its floats through ``json_number`` and
    each step's ``args`` as their canonical JSON, raw."""
    data: dict[str, Any] = {}
    budget = {
        key: json_number(value)
        for key, value in sorted(vars(document.budget).items())
        if value is not None
    }
    if budget:
        data["budget"] = budget
    if document.deliverable is not None:
        data["deliverable"] = document.deliverable
    data["goal"] = document.goal
    data["max_replans"] = document.max_replans
    if document.milestones:
        data["milestones"] = [_hashed_milestone(milestone) for milestone in document.milestones]
    if document.replan != "manual":
        data["replan"] = document.replan
    if document.requires_approval_before:
        data["requires_approval_before"] = document.requires_approval_before
    data["risk_level"] = document.risk_level
    data["schema"] = document.schema
    data["steps"] = [_hashed_step(step, canonical_args) for step in document.steps]
    return data


def _hashed_milestone(milestone: Milestone) -> dict[str, Any]:
    data: dict[str, Any] = {"id": milestone.id}
    if milestone.review:
        data["review"] = True
    data["steps"] = milestone.steps
    if milestone.title:
        data["title"] = milestone.title
    return data


# A step of ``_hashed``: its keys in canonical (sorted) order; what ``to_data`` leaves
# out is UNSET, which msgspec leaves out too. Built positionally in C, where a dict per
# step, key by key, took a large part of hashing a plan (and untracked by the cyclic
# collector: they hold no cycles).
class _HashedStep(msgspec.Struct, gc=False):
    args: Any
    depends_on: Any
    description: Any
    done_when: Any
    estimate: Any
    id: Any
    retries: Any
    rollback_hint: Any
    timeout_s: Any
    tool: Any
    tools_allowed: Any


class _HashedDoneWhen(msgspec.Struct, gc=False):
    checks: Any
    description: Any
    required_keys: Any


class _HashedEstimate(msgspec.Struct, gc=False):
    cost: Any
    seconds: Any
    tokens: Any


def _hashed_step(step: Step, canonical_args: Mapping[int, str]) -> _HashedStep:
    args = step.args
    raw_args: Any = UNSET
    if args:
        written = canonical_args.get(id(args))
        if written is None:
            written = canonical_json(args if type(args) is dict else dict(args))
        raw_args = msgspec.Raw(written)
    done: Any = step.done_when
    if done is not None:
        if done.required_keys or done.checks:  # verifiable
            done = _HashedDoneWhen(
                done.checks or UNSET, done.description or UNSET, done.required_keys or UNSET
            )
        else:
            done = done.description
    estimate: Any = step.estimate
    if estimate is not None:
        seconds = estimate.seconds
        estimate = _HashedEstimate(
            json_number(estimate.cost),
            UNSET if seconds is None else json_number(seconds),
            estimate.tokens,
        )
    timeout = step.timeout_s
    return _HashedStep(
        raw_args,
        step.depends_on,
        step.description or UNSET,
        UNSET if done is None else done,
        UNSET if estimate is None else estimate,
        step.id,
        step.retries or UNSET,
        step.rollback_hint or UNSET,
        UNSET if timeout is None else json_number(timeout),
        UNSET if step.tool is None else step.tool,
        step.tools_allowed or UNSET,
    )
