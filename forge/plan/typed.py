"""The fast way from plain data to a ``PlanDocument``: msgspec checks types while it
builds typed values, in C, where ``forge.plan.codec``'s hand-written checks cost a
Python call per field (reading a 10,000-step plan took several times a topological sort
of it; bench/compile.py).

``read(data, limits)`` gives the document, or ``None`` when the fast way cannot vouch
for the data: any type msgspec refuses, any value its constraints do not cover (a
number that is not finite, a set where a list belongs), a limit reached. The caller then
reads the same data the hand-written way, which refuses it with the error code and
message users know (or, for what only that way accepts, builds it). So the fast way only
ever says yes to data the hand-written way accepts, and builds the same document; a
differential test holds the two to that (tests/unit/plan/test_typed.py).

The node count and depth are counted as ``check_shape`` counts them (each key and each
value, a list's items; the root at depth 1), over the data itself: the typed fields by
their known shape, ``args`` by a walk.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Annotated, Any

import msgspec
from msgspec import Meta

from forge.plan.document import (
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
from forge.plan.limits import ID_PATTERN, ImportLimits

__all__ = ["read"]

_Id = Annotated[str, Meta(pattern=rf"\A{ID_PATTERN.pattern}\Z")]
_Count = Annotated[int, Meta(ge=0)]
_Amount = Annotated[int, Meta(ge=0)] | Annotated[float, Meta(ge=0)]
_Positive = Annotated[int, Meta(gt=0)] | Annotated[float, Meta(gt=0)]


class _DoneWhen(msgspec.Struct, forbid_unknown_fields=True):
    description: str = ""
    required_keys: list[str] | None = None
    checks: list[str] | None = None


class _Estimate(msgspec.Struct, forbid_unknown_fields=True):
    tokens: _Count = 0
    cost: _Amount = 0.0


class _Budget(msgspec.Struct, forbid_unknown_fields=True):
    max_steps: _Count | None = None
    max_tokens: _Count | None = None
    max_cost: _Amount | None = None


class _Step(msgspec.Struct, forbid_unknown_fields=True):
    id: _Id
    description: str = ""
    depends_on: list[_Id] | None = None
    tool: str | None = None
    args: dict[str, Any] | None = None
    tools_allowed: list[str] | None = None
    done_when: str | _DoneWhen | None = None
    timeout_s: _Positive | None = None
    retries: _Count = 0
    rollback_hint: str = ""
    estimate: _Estimate | None = None


class _Milestone(msgspec.Struct, forbid_unknown_fields=True):
    id: _Id
    title: str = ""
    steps: list[_Id] | None = None
    review: bool = False


class _Plan(msgspec.Struct, forbid_unknown_fields=True):
    goal: str
    schema: str = SCHEMA
    deliverable: _Id | None = None
    risk_level: RiskLevel = "low"
    requires_approval_before: list[str] = []
    budget: _Budget | None = None
    max_replans: _Count = 3
    replan: ReplanMode = "manual"
    steps: list[_Step] = []
    milestones: list[_Milestone] | None = None


class _Unsure(Exception):
    """The fast way cannot vouch for the data: read it the hand-written way."""


def read(data: object, limits: ImportLimits) -> PlanDocument | None:
    """``data`` as a ``PlanDocument``, or ``None``: read it with ``codec.from_data``."""
    if type(data) is not dict:
        return None
    try:
        plan = msgspec.convert(data, _Plan, strict=True)
        if plan.schema != SCHEMA or len(plan.steps) > limits.max_steps:
            return None
        _check_shape(data, limits)
        return _document(plan)
    except (msgspec.ValidationError, _Unsure):
        return None


def _check_shape(plan: dict[str, Any], limits: ImportLimits) -> None:
    """``check_shape``'s node count and depth, or ``_Unsure`` past either (or at a value
    of a kind the typed fields do not expect, such as a tuple from a caller)."""
    if limits.max_depth < 5:  # the typed fields alone reach depth 5 (a done_when's list)
        raise _Unsure
    nodes = 1 + 2 * len(plan)
    nodes += _list_length(plan.get("requires_approval_before"))
    budget = plan.get("budget")
    if budget is not None:
        nodes += 2 * len(budget)
        if not _finite(budget.get("max_cost")):
            raise _Unsure
    milestones = plan.get("milestones")
    if milestones is not None:
        nodes += _list_length(milestones)
        for milestone in milestones:
            nodes += 2 * len(milestone) + _list_length(milestone.get("steps"))
    steps = plan.get("steps")
    if steps is not None:
        nodes += _list_length(steps)
        for step in steps:
            nodes += 2 * len(step)
            nodes += _list_length(step.get("depends_on")) + _list_length(step.get("tools_allowed"))
            args = step.get("args")
            if args is not None:
                nodes += _count(args, 4, limits.max_depth)
            done = step.get("done_when")
            if type(done) is dict:
                nodes += 2 * len(done)
                nodes += _list_length(done.get("required_keys")) + _list_length(done.get("checks"))
            estimate = step.get("estimate")
            if estimate is not None:
                nodes += 2 * len(estimate)
                if not _finite(estimate.get("cost")):
                    raise _Unsure
            if not _finite(step.get("timeout_s")):
                raise _Unsure
    if nodes > limits.node_limit:
        raise _Unsure


def _list_length(value: object) -> int:
    if value is None:
        return 0
    if type(value) is not list:  # msgspec also takes tuples and sets for a list
        raise _Unsure
    return len(value)


def _finite(value: object) -> bool:
    return not isinstance(value, float) or math.isfinite(value)


def _count(value: Any, depth: int, max_depth: int) -> int:
    """The nodes inside container ``value`` at ``depth`` (``check_shape``'s count)."""
    if depth > max_depth:
        raise _Unsure
    children: Iterable[Any]
    if type(value) is dict:
        nodes = 2 * len(value)
        children = value.values()
    elif type(value) is list:
        nodes = len(value)
        children = value
    else:
        raise _Unsure  # another container kind: the hand-written way judges it
    for child in children:
        if type(child) is dict or type(child) is list:
            nodes += _count(child, depth + 1, max_depth)
        elif isinstance(child, Mapping | list | tuple):
            raise _Unsure
    return nodes


def _document(plan: _Plan) -> PlanDocument:
    budget = plan.budget
    return PlanDocument(
        schema=plan.schema,
        goal=plan.goal,
        deliverable=plan.deliverable,
        risk_level=plan.risk_level,
        requires_approval_before=tuple(plan.requires_approval_before),
        budget=Budget()
        if budget is None
        else Budget(budget.max_steps, budget.max_tokens, budget.max_cost),
        max_replans=plan.max_replans,
        replan=plan.replan,
        steps=tuple(map(_step, plan.steps)),
        milestones=()
        if plan.milestones is None
        else tuple(
            Milestone(
                id=milestone.id,
                title=milestone.title,
                steps=() if milestone.steps is None else tuple(milestone.steps),
                review=milestone.review,
            )
            for milestone in plan.milestones
        ),
    )


def _step(step: _Step) -> Step:
    done = step.done_when
    estimate = step.estimate
    return _made(
        Step,
        id=step.id,
        description=step.description,
        depends_on=() if step.depends_on is None else tuple(step.depends_on),
        tool=step.tool,
        args={} if step.args is None else step.args,
        tools_allowed=() if step.tools_allowed is None else tuple(step.tools_allowed),
        done_when=None
        if done is None
        else _made(DoneWhen, description=done, required_keys=(), checks=())
        if isinstance(done, str)
        else _made(
            DoneWhen,
            description=done.description,
            required_keys=() if done.required_keys is None else tuple(done.required_keys),
            checks=() if done.checks is None else tuple(done.checks),
        ),
        timeout_s=step.timeout_s,
        retries=step.retries,
        rollback_hint=step.rollback_hint,
        estimate=None
        if estimate is None
        else _made(Estimate, tokens=estimate.tokens, cost=estimate.cost),
    )


def _made[T](cls: type[T], **fields: Any) -> T:
    """An instance of frozen dataclass ``cls`` holding ``fields``, every one of them: its
    ``__init__`` sets each field through ``object.__setattr__``, which was most of the
    time a 10,000-step plan took to read. The values were checked already, and the
    differential test compares the result with ``cls(**fields)``'s."""
    made = object.__new__(cls)
    made.__dict__.update(fields)
    return made
