"""A document's content hash is the SHA-256 of ``json.dumps(to_data(document),
sort_keys=True, separators=(",", ":"), ensure_ascii=False)``: approvals and stored
versions bind to it, so writing it faster must not change one character."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings

from forge.plan import Estimate, PlanDocument, Step, content_hash, load_plan, to_data
from tests.example_plans import PLANS
from tests.examples import examples
from tests.unit.plan.strategies import rich_plans


def standard_hash(document: PlanDocument) -> str:
    text = json.dumps(to_data(document), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.mark.parametrize("path", PLANS, ids=lambda path: path.name)
def test_every_example_plan_hashes_as_the_standard_library_writes_it(path: Path):
    document = load_plan(path.read_text(), "json" if path.suffix == ".json" else "yaml")
    assert content_hash(document) == standard_hash(document)


@settings(max_examples=examples(300), deadline=None)
@given(rich_plans())
def test_any_plan_hashes_as_the_standard_library_writes_it(document):
    assert content_hash(document) == standard_hash(document)


def test_floats_json_spells_unlike_msgspec_hash_as_json_spells_them():
    step = Step(
        id="a",
        args={"small": 1e-05, "big": 1e16, "nested": [{"tiny": 2.5e-07}], "nan": float("nan")},
        timeout_s=1e20,
        estimate=Estimate(tokens=1, cost=1e-05, seconds=float("inf")),
    )
    document = PlanDocument(goal="g", steps=(step,))
    assert content_hash(document) == standard_hash(document)


def test_what_json_cannot_write_is_refused_as_before():
    document = PlanDocument(goal="g", steps=(Step(id="a", args={"when": {1, 2}}),))
    with pytest.raises(TypeError, match="Object of type set is not JSON serializable"):
        content_hash(document)
    lone = replace(document, steps=(Step(id="a", description="\ud800"),))
    with pytest.raises(UnicodeEncodeError):
        content_hash(lone)
