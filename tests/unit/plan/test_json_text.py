"""The JSON Forge writes: ``indented_json`` is ``json.dumps(indent=2, ensure_ascii=False)``
to the character, only faster; ``canonical_json`` keeps its one spelling (hashes depend on
it); ``paused_gc`` restores the collector as it found it."""

from __future__ import annotations

import gc
import json
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from forge.gcpause import paused_gc
from forge.plan.codec import canonical_json, indented_json

JSON = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(JSON)
def test_indented_json_is_json_dumps_with_an_indent_to_the_character(data):
    assert indented_json(data) == json.dumps(data, indent=2, ensure_ascii=False)


@settings(max_examples=300, deadline=None)
@given(JSON)
def test_canonical_json_is_still_its_one_spelling(data):
    expected = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert canonical_json(data) == expected


def test_indented_json_of_what_only_python_writes_is_the_same_too():
    data = {"inf": math.inf, "nan": math.nan, "text": 'é \u2028 \x01 "q" \\ /', "e": [], "o": {}}
    assert indented_json(data) == json.dumps(data, indent=2, ensure_ascii=False)


def test_a_paused_collector_comes_back_as_it_was():
    assert gc.isenabled()
    with paused_gc():
        assert not gc.isenabled()
        with paused_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with paused_gc():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
