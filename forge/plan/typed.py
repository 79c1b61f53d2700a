"""The fast way to a ``PlanDocument``: msgspec checks types while it builds typed values,
in C, where ``forge.plan.codec``'s hand-written checks cost a Python call per field
(reading a 10,000-step plan took several times a topological sort of it;
bench/compile.py).

``read_json(text, limits)`` decodes JSON text straight into the typed values, without
the plain data in between; ``read(data, limits)`` converts plain data (what YAML and
callers give). Each gives the document, or ``None`` when the fast way cannot vouch for
the input: any type msgspec refuses, any value its constraints do not cover (a number
that is not finite, a set where a list belongs), a limit reached, a repeated key, text
that is not JSON. The caller then reads the same input the hand-written way, which
refuses it with the error code and message users know (or, for what only that way
accepts, builds it). So the fast way only ever says yes to input the hand-written way
accepts, and builds the same document; differential tests hold the two to that
(tests/unit/plan/test_typed.py).

The node count and depth are counted as ``check_shape`` counts them (each key and each
value, a list's items; the root at depth 1): over the plain data for ``read``, over the
typed values for ``read_json`` (fields left out stay ``UNSET``, so each key given is
counted). msgspec keeps the last of a repeated key where ``parse_json`` refuses it, so
``read_json`` also counts the keys it kept against the colons of the text that can end a
key: a repeated key leaves fewer kept than written.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Annotated, Any

import msgspec
from msgspec import UNSET, Meta, UnsetType
from msgspec.structs import astuple

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
from forge.plan.limits import ID_PATTERN, QUANTITY_LIMIT, ImportLimits, too_deep

__all__ = ["read", "read_json"]

# Ids are checked against ``ID_PATTERN`` all at once, by ``_ids_valid``: as a constraint
# msgspec would call the regular expression once per id, which took half as long as a
# topological sort of a 10,000-step plan.
_Id = str
# Any number of ids, each followed by a newline (which no id may hold).
_IDS = re.compile(rf"(?:{ID_PATTERN.pattern}\n)*")
_Count = Annotated[int, Meta(ge=0, le=QUANTITY_LIMIT)]
_Amount = (
    Annotated[int, Meta(ge=0, le=QUANTITY_LIMIT)] | Annotated[float, Meta(ge=0, le=QUANTITY_LIMIT)]
)
_Positive = (
    Annotated[int, Meta(gt=0, le=QUANTITY_LIMIT)] | Annotated[float, Meta(gt=0, le=QUANTITY_LIMIT)]
)
_Ids = tuple[_Id, ...]
_Texts = tuple[str, ...]

# Every field the hand-written reader defaults is UNSET when left out, so that the keys
# given can be counted; null is typed only where that reader takes it for "not given".
# Decoded values hold no reference cycles, so the cyclic collector need not track them.


class _DoneWhen(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    description: str | UnsetType = UNSET
    required_keys: _Texts | None | UnsetType = UNSET
    checks: _Texts | None | UnsetType = UNSET


class _Estimate(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    tokens: _Count | UnsetType = UNSET
    cost: _Amount | UnsetType = UNSET
    seconds: _Amount | None | UnsetType = UNSET


class _Budget(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    max_steps: _Count | None | UnsetType = UNSET
    max_tokens: _Count | None | UnsetType = UNSET
    max_cost: _Amount | None | UnsetType = UNSET


class _Step(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    id: _Id
    description: str | UnsetType = UNSET
    depends_on: _Ids | None | UnsetType = UNSET
    tool: str | None | UnsetType = UNSET
    args: dict[str, Any] | None | UnsetType = UNSET
    tools_allowed: _Texts | None | UnsetType = UNSET
    done_when: str | _DoneWhen | None | UnsetType = UNSET
    timeout_s: _Positive | None | UnsetType = UNSET
    retries: _Count | UnsetType = UNSET
    rollback_hint: str | UnsetType = UNSET
    estimate: _Estimate | None | UnsetType = UNSET


class _Milestone(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    id: _Id
    title: str | UnsetType = UNSET
    steps: _Ids | None | UnsetType = UNSET
    review: bool | UnsetType = UNSET


class _Plan(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    goal: str
    schema: str | UnsetType = UNSET
    deliverable: _Id | None | UnsetType = UNSET
    risk_level: RiskLevel | UnsetType = UNSET
    requires_approval_before: _Texts | UnsetType = UNSET
    budget: _Budget | None | UnsetType = UNSET
    max_replans: _Count | UnsetType = UNSET
    replan: ReplanMode | UnsetType = UNSET
    steps: list[_Step] | UnsetType = UNSET
    milestones: list[_Milestone] | None | UnsetType = UNSET


_JSON = msgspec.json.Decoder(_Plan)


class _Unsure(Exception):
    """The fast way cannot vouch for the input: read it the hand-written way."""


def read(data: object, limits: ImportLimits) -> PlanDocument | None:
    """``data`` as a ``PlanDocument``, or ``None``: read it with ``codec.from_data``."""
    if type(data) is not dict:
        return None
    try:
        plan = msgspec.convert(data, _Plan, strict=True)
        if not _fits(plan, limits):
            return None
        _check_shape(data, limits)
        return _document(plan, limits.max_depth)[0]
    except (msgspec.ValidationError, _Unsure):
        return None


def read_json(text: str | bytes, limits: ImportLimits) -> PlanDocument | None:
    """The plan of JSON ``text`` (UTF-8 when bytes), or ``None``: read it with
    ``json_io.parse_json`` and ``codec.from_data``. ``text`` is within
    ``limits.max_bytes`` already."""
    if limits.max_depth < 5:  # the typed fields alone reach depth 5 (a done_when's list)
        return None
    try:
        plan = _JSON.decode(text)
        if not _fits(plan, limits):
            return None
        document, nodes, keys = _document(plan, limits.max_depth)
    except (msgspec.DecodeError, _Unsure):  # a ValidationError is a DecodeError
        return None
    except RecursionError:
        # msgspec recurses once per nesting level, so only documents far deeper than any
        # limit get here: over the depth limit by construction (as in json_io).
        raise too_deep(limits.max_depth) from None
    if nodes > limits.node_limit or not _keys_all_kept(text, keys):
        return None
    return document


def _fits(plan: _Plan, limits: ImportLimits) -> bool:
    """Whether the schema is this one and the steps within the limit (else the
    hand-written way says which is wrong)."""
    return (plan.schema is UNSET or plan.schema == SCHEMA) and (
        plan.steps is UNSET or len(plan.steps) <= limits.max_steps
    )


def _keys_all_kept(text: str | bytes, kept: int) -> bool:
    """Whether JSON ``text`` holds no more keys than the ``kept`` its decoded values hold.

    Every key is followed by a colon, after only whitespace: counting the colons that
    follow a quote or whitespace counts each key, and the colons inside strings that
    happen to. That count is the most keys the text can hold; if it is ``kept``, no key
    was repeated. Each count is a pass over the text: the first, of every colon, is
    enough when no string holds one."""
    colon, after_a_quote, *after_spaces = _COLONS if isinstance(text, str) else _COLON_BYTES
    count: Callable[[Any], int] = text.count
    colons = count(colon)
    if colons == kept:
        return True
    after_quote = count(after_a_quote)
    if colons == after_quote:
        return after_quote == kept
    return after_quote + sum(map(count, after_spaces)) == kept


# A colon, then a colon after a quote, after a space, a newline, a tab, a return.
_COLONS = (":", '":', " :", "\n:", "\t:", "\r:")
_COLON_BYTES = tuple(pattern.encode() for pattern in _COLONS)


def _given(struct: msgspec.Struct) -> int:
    """How many of a typed value's keys were given."""
    fields = astuple(struct)
    return len(fields) - fields.count(UNSET)


def _json_count(value: dict[str, Any] | list[Any], depth: int, max_depth: int) -> tuple[int, int]:
    """The list items and the keys inside decoded JSON container ``value`` at ``depth``
    (``check_shape`` counts a node for each item, and two for each key and its value)."""
    if depth > max_depth:
        raise _Unsure
    children: Iterable[Any]
    if type(value) is dict:
        items, keys = 0, len(value)
        children = value.values()
    else:
        items, keys = len(value), 0
        children = value
    for child in children:
        if type(child) is dict or type(child) is list:
            inner_items, inner_keys = _json_count(child, depth + 1, max_depth)
            items += inner_items
            keys += inner_keys
    return items, keys


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
                if not (_finite(estimate.get("cost")) and _finite(estimate.get("seconds"))):
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


def _document(plan: _Plan, max_depth: int) -> tuple[PlanDocument, int, int]:
    """The document of ``plan``, with ``check_shape``'s node count of the decoded values
    (each list item, and each key with its value) and how many keys they hold
    (``_Unsure`` past ``max_depth``: only an argument can be nested that deep)."""
    budget = plan.budget
    milestones = plan.milestones
    requires = plan.requires_approval_before
    keys = _given(plan)
    nodes = 1  # the root; list items are added here, keys at the end
    if requires is UNSET:
        requires = ()
    nodes += len(requires)
    if budget:  # UNSET and None are false, a budget true
        keys += _given(budget)
        made_budget = Budget(_or(budget.max_steps), _or(budget.max_tokens), _or(budget.max_cost))
    else:
        made_budget = Budget()
    deliverable = None if plan.deliverable is UNSET else plan.deliverable
    ids: list[str] = [] if deliverable is None else [deliverable]
    steps: tuple[Step, ...] = ()
    if plan.steps:
        steps, items, inner = _steps(plan.steps, max_depth, ids)
        nodes += items
        keys += inner
    made_milestones: tuple[Milestone, ...] = ()
    if milestones:
        nodes += len(milestones)
        made_milestones = tuple(map(_milestone, milestones))
        for milestone in made_milestones:
            nodes += len(milestone.steps)
            ids.append(milestone.id)
            ids.extend(milestone.steps)
        keys += sum(map(_given, milestones))
    if not _ids_valid(ids):
        raise _Unsure
    document = PlanDocument(
        schema=SCHEMA,
        goal=plan.goal,
        deliverable=deliverable,
        risk_level="low" if plan.risk_level is UNSET else plan.risk_level,
        requires_approval_before=requires,
        budget=made_budget,
        max_replans=3 if plan.max_replans is UNSET else plan.max_replans,
        replan="manual" if plan.replan is UNSET else plan.replan,
        steps=steps,
        milestones=made_milestones,
    )
    return document, nodes + 2 * keys, keys


def _ids_valid(ids: list[str]) -> bool:
    """Whether every one of ``ids`` matches ``ID_PATTERN``: one match over them all."""
    text = "\n".join(ids) + "\n" if ids else ""
    return text.count("\n") == len(ids) and _IDS.fullmatch(text) is not None


def _or[T](value: T | None | UnsetType) -> T | None:
    return None if value is UNSET else value


def _milestone(milestone: _Milestone) -> Milestone:
    return Milestone(
        id=milestone.id,
        title="" if milestone.title is UNSET else milestone.title,
        steps=milestone.steps or (),
        review=False if milestone.review is UNSET else milestone.review,
    )


# The values are checked already; each is made positionally, in C (``Step`` and its parts
# are msgspec structs), and the differential tests compare the result with the
# hand-written reader's, made with keywords, field for field.
if Step.__struct_fields__ != ("id", "description", "depends_on", "tool", "args",
                              "tools_allowed", "done_when", "timeout_s", "retries",
                              "rollback_hint", "estimate"):  # fmt: skip
    raise TypeError("Step has other fields than _steps makes")


def _steps(steps: list[_Step], max_depth: int, ids: list[str]) -> tuple[tuple[Step, ...], int, int]:
    """The steps, with the list items (the list's own and those inside each step) and the
    keys they hold; their ids and dependencies are added to ``ids``."""
    made: list[Step] = []
    append = made.append
    add_id, add_ids = ids.append, ids.extend
    items = len(steps)
    keys = 0
    for struct in steps:
        values = astuple(struct)
        keys += 11 - values.count(UNSET)
        (step_id, description, depends_on, tool, args, tools_allowed, done, timeout,
         retries, hint, estimate) = values  # fmt: skip
        add_id(step_id)
        if depends_on:
            items += len(depends_on)
            add_ids(depends_on)
        else:
            depends_on = ()
        if tools_allowed:
            items += len(tools_allowed)
        else:
            tools_allowed = ()
        if args:  # at depth 4, within ``max_depth`` (both readers make sure): its keys
            keys += len(args)
            for value in args.values():  # most arguments are flat: no call for them
                if type(value) is dict or type(value) is list:
                    inner_items, inner_keys = _json_count(value, 5, max_depth)
                    items += inner_items
                    keys += inner_keys
        else:
            args = {}
        if done is UNSET or done is None:
            done = None
        elif type(done) is str:
            done = DoneWhen(done)
        else:
            given = astuple(done)
            keys += 3 - given.count(UNSET)
            text, required, checks = given
            if required:
                items += len(required)
            if checks:
                items += len(checks)
            done = DoneWhen("" if text is UNSET else text, required or (), checks or ())
        if estimate is UNSET or estimate is None:
            estimate = None
        else:
            given = astuple(estimate)
            keys += 3 - given.count(UNSET)
            tokens, cost, seconds = given
            estimate = Estimate(
                0 if tokens is UNSET else tokens,
                0.0 if cost is UNSET else cost,
                None if seconds is UNSET else seconds,
            )
        append(
            Step(
                step_id,
                "" if description is UNSET else description,
                depends_on,
                None if tool is UNSET else tool,
                args,
                tools_allowed,
                done,
                None if timeout is UNSET else timeout,
                0 if retries is UNSET else retries,
                "" if hint is UNSET else hint,
                estimate,
            )
        )
    return tuple(made), items, keys
