"""Nesting far past the depth limit, anywhere in a document, is refused as
``document_too_deep`` by every reader, quickly, and never as a ``RecursionError``.

The nesting is written as text (``[[[...]]]`` or ``{"a":{"a":...}}``), never built as
data first: building it would recurse in the test itself. A JSON document is also a YAML
one (flow style), so the same text feeds both readers; Mermaid carries JSON in its
``%% forge:`` and ``%% forge-step`` comments. How fast each refusal is (a few
milliseconds) is measured by ``bench.import_limits``, not timed here.
"""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from forge.errors import PlanDocumentError
from forge.plan import load_plan
from tests.examples import examples

LEVELS = 100_000
MARK = "__deep__"

# Every field of a document (and of a step, a done_when, an estimate, a budget and a
# milestone), each holding a value of its own kind, so that each path below is a place a
# real document has.
FULL = {
    "schema": "forge.plan/v1",
    "goal": "g",
    "deliverable": "b",
    "risk_level": "low",
    "requires_approval_before": ["external_email"],
    "budget": {"max_steps": 5, "max_tokens": 10, "max_cost": 1.0},
    "max_replans": 1,
    "replan": "manual",
    "milestones": [
        {"id": "m1", "title": "first", "steps": ["a"], "review": True},
        {"id": "m2", "title": "second", "steps": ["b"], "review": False},
    ],
    "steps": [
        {
            "id": "a",
            "description": "Read the contracts",
            "depends_on": [],
            "tool": "echo",
            "args": {"text": "x", "list": [1, 2], "nested": {"k": "v"}},
            "done_when": {"description": "read", "required_keys": ["text"], "checks": ["text"]},
            "timeout_s": 3,
            "retries": 0,
            "rollback_hint": "none",
            "estimate": {"tokens": 1, "cost": 0.1, "seconds": 2},
        },
        {
            "id": "b",
            "description": "Write the report",
            "depends_on": ["a"],
            "tools_allowed": ["echo"],
        },
    ],
}


def _paths(value: object, path: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    """Every place in ``value`` that holds a value (the root excluded)."""
    places: list[tuple[object, ...]] = [path] if path else []
    if isinstance(value, dict):
        for key, child in value.items():
            places += _paths(child, (*path, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            places += _paths(child, (*path, index))
    return places


PATHS = _paths(FULL)


def _with_mark(path: tuple[object, ...]) -> dict[str, object]:
    data = json.loads(json.dumps(FULL))
    here = data
    for key in path[:-1]:
        here = here[key]
    here[path[-1]] = MARK
    return data


def _deep(kind: str) -> str:
    if kind == "list":
        return "[" * LEVELS + "]" * LEVELS
    return '{"a":' * LEVELS + "1" + "}" * LEVELS


def _deep_json(path: tuple[object, ...], kind: str) -> str:
    return json.dumps(_with_mark(path)).replace(json.dumps(MARK), _deep(kind))


def _refused(source: str | bytes, fmt: str) -> None:
    with pytest.raises(PlanDocumentError) as caught:
        load_plan(source, fmt)
    assert caught.value.code == "document_too_deep", caught.value
    assert "max_depth" in caught.value.message


def test_the_paths_cover_every_field_of_the_document():
    keys = {path[-1] for path in PATHS if isinstance(path[-1], str)}
    assert {"goal", "budget", "milestones", "steps", "args", "done_when", "estimate"} <= keys
    assert {"tools_allowed", "depends_on", "checks", "required_keys", "seconds"} <= keys
    assert len(PATHS) > 50


@settings(max_examples=examples(40), deadline=None)
@given(path=st.sampled_from(PATHS), kind=st.sampled_from(["list", "object"]))
def test_absurd_nesting_anywhere_is_refused_by_every_json_and_yaml_reader(path, kind):
    source = _deep_json(path, kind)

    _refused(source, "json")
    _refused(source.encode(), "json")  # the bytes' own fast way
    _refused(source, "yaml")


@settings(max_examples=examples(10), deadline=None)
@given(kind=st.sampled_from(["list", "object"]), where=st.sampled_from(["plan", "step"]))
def test_absurd_nesting_in_mermaid_metadata_is_refused(kind, where):
    deep = _deep(kind)
    meta = (
        f'%% forge: {{"goal": "g", "budget": {deep}}}'
        if where == "plan"
        else f'%% forge-step a: {{"args": {{"x": {deep}}}}}'
    )
    source = f"flowchart TD\n    {meta}\n    a[Read the contracts]\n"

    _refused(source, "mermaid")


def test_the_issue_s_own_document_is_refused_from_bytes_and_from_text():
    # 600 KB: 100,000 levels of objects inside one step's args.
    source = _deep_json(("steps", 0, "args"), "object")
    assert len(source) > 600_000

    _refused(source.encode(), "json")
    _refused(source, "json")
