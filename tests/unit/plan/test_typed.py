"""The fast readers (``forge.plan.typed``) against the hand-written one (``codec.
read_by_hand``): on any data, or any JSON text, the fast one either declines (and the
hand-written one decides, with its codes and messages) or builds the very document the
hand-written one builds. Hypothesis mutates valid plans field by field into every kind of
wrong value."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from forge.errors import PlanDocumentError
from forge.plan import from_data, load_plan, to_data
from forge.plan.codec import read_by_hand
from forge.plan.formats.json_io import parse_json
from forge.plan.limits import ImportLimits
from forge.plan.typed import read, read_json
from tests.example_plans import PLANS
from tests.examples import examples

DEFAULT = ImportLimits()


def agree(data: Any, limits: ImportLimits = DEFAULT) -> str:
    """Check that both readers agree on ``data``; say which one decided."""
    fast = read(data, limits)
    try:
        by_hand = read_by_hand(data, limits)
    except PlanDocumentError:
        assert fast is None, f"the fast reader accepted what the hand-written one refuses: {data!r}"
        return "refused"
    if fast is None:
        return "by hand"
    assert fast == by_hand
    assert to_data(fast) == to_data(by_hand)
    for mine, theirs in zip(fast.steps, by_hand.steps, strict=True):
        assert type(mine.args) is dict and mine.args == theirs.args
        assert type(mine.timeout_s) is type(theirs.timeout_s)
        if mine.estimate is not None:
            assert type(mine.estimate.cost) is type(theirs.estimate.cost)  # 1 stays 1, not 1.0
    return "fast"


@pytest.mark.parametrize("path", PLANS, ids=lambda path: path.name)
def test_every_example_plan_reads_the_fast_way_to_the_same_document(path: Path):
    text = path.read_text()
    document = load_plan(text, "json" if path.suffix == ".json" else "yaml")
    data = to_data(document)
    assert agree(data) == "fast"
    assert from_data(data) == document


SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["", "ok", "a b", "s1", "x" * 65, "bad\n", "low", "forge.plan/v1", "high"]),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.tuples(inner),
        st.dictionaries(st.sampled_from(["a", "b", "id", "tool"]), inner, max_size=3),
        st.frozensets(st.integers(0, 3), max_size=2),
    ),
    max_leaves=6,
)

STEP = {
    "id": "s1",
    "description": "Fetch the list",
    "depends_on": ["s0"],
    "tool": "echo",
    "args": {"n": 1, "deep": {"list": [1, [2, {"x": None}]]}},
    "tools_allowed": ["echo"],
    "done_when": {"description": "done", "required_keys": ["n"], "checks": ["n > `0`"]},
    "timeout_s": 5,
    "retries": 1,
    "rollback_hint": "none",
    "estimate": {"tokens": 10, "cost": 1},
}
PLAN = {
    "schema": "forge.plan/v1",
    "goal": "Ship it",
    "deliverable": "s1",
    "risk_level": "medium",
    "requires_approval_before": ["s1"],
    "budget": {"max_steps": 3, "max_tokens": 100, "max_cost": 2.5},
    "max_replans": 2,
    "replan": "auto",
    "steps": [{"id": "s0", "done_when": "a text"}, STEP],
    "milestones": [
        {"id": "m1", "title": "First", "steps": ["s0"], "review": True},
        {"id": "m2", "steps": ["s1"]},
    ],
}
PATHS = [
    *[(key,) for key in PLAN],
    *[("budget", key) for key in PLAN["budget"]],
    *[("steps", 1, key) for key in STEP],
    *[("steps", 1, "done_when", key) for key in STEP["done_when"]],
    *[("steps", 1, "estimate", key) for key in STEP["estimate"]],
    *[("milestones", 0, key) for key in PLAN["milestones"][0]],
    ("milestones", 0, "steps", 0),
    ("milestones", 1),
    ("steps", 1, "args", "deep", "list"),
    ("steps", 0),
    ("steps", 1, "depends_on", 0),
]


def mutated(path: tuple[Any, ...], value: Any, drop: bool) -> dict[str, Any]:
    data = _copy(PLAN)
    holder = data
    for key in path[:-1]:
        holder = holder[key]
    if drop and isinstance(holder, dict):
        holder.pop(path[-1], None)
    else:
        holder[path[-1]] = value
    return data


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy(item) for item in value]
    return value


EDGES = [
    None, True, False, -1, 0, 1, 2.5, -0.5, 0.0, math.inf, -math.inf, math.nan, 10**30,
    10**12, 10**12 + 1, 1e12, 1.0000000001e12, 1e308,
    "", "ok", "s0", "x" * 65, "bad\n", "low", [], ["s0"], [1], [None], [["s0"]], ("s0",),
    {"a": 1}, {1: 2}, {"description": "d"}, frozenset({"s0"}),
]  # fmt: skip


def test_every_field_set_to_every_edge_value_reads_the_same_both_ways():
    outcomes = {"fast": 0, "by hand": 0, "refused": 0}
    for path in PATHS:
        for drop in (True, False):
            for value in [None] if drop else EDGES:
                outcomes[agree(mutated(path, value, drop))] += 1
    assert outcomes["fast"] > 50 and outcomes["refused"] > 300  # both ways are exercised


def test_the_unmutated_plan_reads_the_fast_way():
    assert agree(_copy(PLAN)) == "fast"


@settings(max_examples=examples(600), deadline=None)
@given(st.sampled_from(PATHS), VALUES, st.booleans())
def test_a_plan_with_any_field_changed_to_anything_reads_the_same_both_ways(path, value, drop):
    agree(mutated(path, value, drop))


@settings(max_examples=examples(150), deadline=None)
@given(
    st.sampled_from(PATHS),
    VALUES,
    st.integers(1, 8),
    st.integers(1, 60),
    st.integers(0, 4),
)
def test_limits_are_judged_the_same_both_ways(path, value, depth, nodes, steps):
    limits = ImportLimits(max_depth=depth, max_nodes=nodes, max_steps=steps)
    agree(mutated(path, value, False), limits)


def test_a_plan_at_its_node_limit_reads_and_one_node_over_does_not():
    data = _copy(PLAN)
    count = 0
    stack: list[Any] = [data]
    while stack:  # check_shape's count
        value = stack.pop()
        if isinstance(value, dict):
            count += 2 * len(value)
            stack.extend(value.values())
        elif isinstance(value, list):
            count += len(value)
            stack.extend(value)
    count += 1
    assert agree(data, ImportLimits(max_nodes=count)) == "fast"
    assert agree(data, ImportLimits(max_nodes=count - 1)) == "refused"


def test_a_number_that_is_not_finite_is_left_to_the_hand_written_reader():
    data = mutated(("steps", 1, "timeout_s"), math.inf, False)
    assert read(data, DEFAULT) is None
    with pytest.raises(PlanDocumentError) as refused:
        from_data(data)
    assert refused.value.code == "invalid_document"


# JSON text decoded straight into typed values (``read_json``) against the standard
# library's parser and the hand-written reader: the same document, or ``None`` where the
# hand-written way decides (and refuses what it refuses).


def agree_json(text: str, limits: ImportLimits = DEFAULT) -> str:
    """Check that ``read_json`` and ``parse_json`` + ``read_by_hand`` agree on ``text``,
    and that ``read_json`` reads its UTF-8 bytes as it reads the text."""
    fast = read_json(text, limits)
    assert read_json(text.encode(errors="surrogatepass"), limits) == fast
    try:
        by_hand = read_by_hand(parse_json(text, limits), limits)
    except PlanDocumentError:
        assert fast is None, f"read_json accepted what the hand-written way refuses: {text!r}"
        return "refused"
    if fast is None:
        return "by hand"
    assert fast == by_hand
    assert to_data(fast) == to_data(by_hand)
    for mine, theirs in zip(fast.steps, by_hand.steps, strict=True):
        assert field_types(mine) == field_types(theirs)
        assert type(mine.args) is dict
        for part in ("estimate", "done_when"):
            assert field_types(getattr(mine, part)) == field_types(getattr(theirs, part))
    return "fast"


def field_types(value: Any) -> list[tuple[str, type]] | None:
    """Each field of a plan value with the type of what it holds: 1 stays 1, not 1.0."""
    if value is None:
        return None
    return [(name, type(getattr(value, name))) for name in value.__struct_fields__]


STYLES = [
    {},
    {"indent": 2},
    {"indent": "\t"},
    {"separators": (",", " : ")},
    {"separators": (",\n", "\n:\r\n")},
    {"indent": 1, "ensure_ascii": False},
]


@pytest.mark.parametrize("style", range(len(STYLES)))
@pytest.mark.parametrize("path", PLANS, ids=lambda path: path.name)
def test_every_example_plan_as_json_text_reads_the_fast_way(path: Path, style: int):
    fmt = "json" if path.suffix == ".json" else "yaml"
    data = to_data(load_plan(path.read_text(), fmt))
    assert agree_json(json.dumps(data, **STYLES[style])) == "fast"


def test_every_field_set_to_every_edge_value_reads_the_same_from_json_text():
    outcomes = {"fast": 0, "by hand": 0, "refused": 0}
    for path in PATHS:
        for drop in (True, False):
            for value in [None] if drop else EDGES:
                data = mutated(path, value, drop)
                try:
                    text = json.dumps(data)
                except TypeError:  # a set, or a key JSON cannot hold
                    continue
                outcomes[agree_json(text)] += 1
    assert outcomes["fast"] > 50 and outcomes["refused"] > 250  # both ways are exercised


@settings(max_examples=examples(400), deadline=None)
@given(st.sampled_from(PATHS), VALUES, st.booleans(), st.sampled_from(range(len(STYLES))))
def test_json_text_with_any_field_changed_to_anything_reads_the_same(path, value, drop, style):
    try:
        text = json.dumps(mutated(path, value, drop), **STYLES[style])
    except TypeError:
        return
    agree_json(text)


@settings(max_examples=examples(150), deadline=None)
@given(st.sampled_from(PATHS), VALUES, st.integers(1, 8), st.integers(1, 60), st.integers(0, 4))
def test_limits_are_judged_the_same_from_json_text(path, value, depth, nodes, steps):
    try:
        text = json.dumps(mutated(path, value, False))
    except TypeError:
        return
    agree_json(text, ImportLimits(max_depth=depth, max_nodes=nodes, max_steps=steps))


def test_json_text_at_its_node_limit_reads_and_one_node_over_does_not():
    text = json.dumps(PLAN)
    count = 1
    stack: list[Any] = [PLAN]
    while stack:  # check_shape's count
        value = stack.pop()
        if isinstance(value, dict):
            count += 2 * len(value)
            stack.extend(value.values())
        elif isinstance(value, list):
            count += len(value)
            stack.extend(value)
    assert agree_json(text, ImportLimits(max_nodes=count)) == "fast"
    assert agree_json(text, ImportLimits(max_nodes=count - 1)) == "refused"


# Each place a key can be repeated: the plan, a step, its arguments (nested too), its
# done_when and estimate, the budget, a milestone. msgspec would keep the last value.
REPEATED = [
    ('"goal": "Ship it",', '"goal": "Ship it", "goal": "Ship that",'),
    ('"id": "s1",', '"id": "s1", "id": "s2",'),
    ('"deep": {"list"', '"deep": {"list": [], "list"'),
    ('"args": {"n": 1,', '"args": {"n": 1, "n": 2,'),
    ('"required_keys": ["n"],', '"required_keys": ["n"], "required_keys": [],'),
    ('"tokens": 10,', '"tokens": 10, "tokens": 11,'),
    ('"max_steps": 3,', '"max_steps": 3, "max_steps": 4,'),
    ('"title": "First",', '"title": "First", "review": false,'),
    ('"schema": "forge.plan/v1",', '"schema": "forge.plan/v1", "schema": "forge.plan/v1",'),
]


@pytest.mark.parametrize(("before", "after"), REPEATED)
@pytest.mark.parametrize("style", [{}, {"separators": (",", " :")}])
def test_a_repeated_key_anywhere_is_refused_as_the_standard_parser_refuses_it(before, after, style):
    text = json.dumps(PLAN)
    assert before in text
    repeated = text.replace(before, after, 1)
    if style:
        repeated = repeated.replace('": ', '" : ')
    assert read_json(repeated, DEFAULT) is None
    with pytest.raises(PlanDocumentError) as refused:
        load_plan(repeated, "json")
    assert refused.value.code == "duplicate_key"


@pytest.mark.parametrize(
    ("text", "way"),
    [
        ("time 10:00, url https://example.com:8080/x", "fast"),
        ("a\\:b\n:c\t:d", "fast"),  # in JSON its colons follow a \\, an n and a t
        ('say "hi": now', "by hand"),  # in JSON an escaped quote and a colon: as a key ends
        ("key : value", "by hand"),
    ],
)
def test_colons_inside_strings_never_hide_a_repeated_key(text, way):
    data = _copy(PLAN)
    data["goal"] = text
    data["steps"][1]["args"][text] = text
    for style in STYLES:
        assert agree_json(json.dumps(data, **style)) in ("fast", "by hand")
    compact = json.dumps(data, separators=(",", ":"))
    assert agree_json(compact) == way
    repeated = compact.replace('"args":{', '"args":{"n":0,', 1)
    assert read_json(repeated, DEFAULT) is None


@pytest.mark.parametrize(
    "text",
    [
        "",
        "[]",
        '{"goal": "g", "steps": [], }',
        '{"goal": "g", "steps": [NaN]}',
        '{"goal": "g", "budget": {"max_cost": Infinity}}',
        '{"goal": "g", "steps": [{"id": "a", "timeout_s": 1e400}]}',
        '{"goal": "\\ud800"}',
        '{"goal": "g"} x',
        '\x0c{"goal": "g"}',
        '{"goal": "tab\tinside"}',
    ],
)
def test_what_is_not_json_or_only_python_reads_is_left_to_the_standard_parser(text):
    assert read_json(text, DEFAULT) is None
    agree_json(text)


@pytest.mark.parametrize(
    ("source", "code"),
    [
        (b'{"goal": "\xff", "steps": []}', "invalid_encoding"),
        (b'{"goal": "g", "steps": []}\xff', "invalid_encoding"),
        (b'{"goal": "\xed\xa0\x80", "steps": []}', "invalid_encoding"),
        (b'{"goal": "g", "goal": "h", "steps": []}', "duplicate_key"),
        (b'{"goal": "g", "steps": [NaN]}', "invalid_json"),
    ],
)
def test_json_bytes_are_refused_as_their_text_is(source, code):
    with pytest.raises(PlanDocumentError) as refused:
        load_plan(source, "json")
    assert refused.value.code == code


def test_json_bytes_with_a_byte_order_mark_read_the_fast_way_to_the_same_plan():
    text = json.dumps(PLAN, ensure_ascii=False)
    source = "\ufeff".encode() + text.encode()
    assert load_plan(source, "json") == read_json(text, DEFAULT) == load_plan(text, "json")
