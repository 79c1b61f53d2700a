"""The JSON Forge writes: ``indented_json`` is ``json.dumps(indent=2, ensure_ascii=False)``
to the character, only faster; ``canonical_json`` keeps its one spelling (hashes depend on
it); msgspec, given floats through ``json_number``, writes the same texts
(``encode_plain``, ``indented_plain``); ``paused_gc`` restores the collector as it found
it."""

from __future__ import annotations

import gc
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from forge.gcpause import paused_gc
from forge.plan.codec import canonical_json, indented_json
from forge.plan.jsontext import encode_plain, indented_plain, json_number
from tests.examples import examples

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


@settings(max_examples=examples(300), deadline=None)
@given(JSON)
def test_indented_json_is_json_dumps_with_an_indent_to_the_character(data):
    assert indented_json(data) == json.dumps(data, indent=2, ensure_ascii=False)


@settings(max_examples=examples(300), deadline=None)
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


def _through_json_number(data):
    if isinstance(data, dict):
        return {key: _through_json_number(value) for key, value in data.items()}
    if isinstance(data, list):
        return [_through_json_number(value) for value in data]
    return json_number(data)


@settings(max_examples=examples(500), deadline=None)
@given(st.floats() | st.integers() | st.booleans() | st.none())
def test_a_number_through_json_number_is_written_by_msgspec_as_json_writes_it(number):
    assert encode_plain(json_number(number)).decode() == json.dumps(number)


@pytest.mark.parametrize(
    "number", [1e16, 1e-05, 2.5e-07, 1e-10, 1e300, 5e-324, 0.0001, 9999999999999998.0, -0.0]
)
def test_floats_msgspec_spells_its_own_way_are_written_as_json_writes_them(number):
    assert encode_plain([json_number(number)]).decode() == json.dumps([number])


@settings(max_examples=examples(300), deadline=None)
@given(JSON)
def test_indented_plain_is_json_dumps_with_an_indent_to_the_character(data):
    expected = json.dumps(data, indent=2, ensure_ascii=False)
    assert indented_plain(_through_json_number(data)).decode() == expected


@settings(max_examples=examples(300), deadline=None)
@given(JSON)
def test_encode_plain_of_sorted_data_is_canonical_json(data):
    def in_order(value):
        if isinstance(value, dict):
            return {key: in_order(value[key]) for key in sorted(value)}
        if isinstance(value, list):
            return [in_order(item) for item in value]
        return json_number(value)

    assert encode_plain(in_order(data)) == canonical_json(data).encode()


def test_canonical_json_refuses_what_json_refuses_with_its_words():
    looped: list[object] = []
    looped.append(looped)
    with pytest.raises(ValueError, match="Circular reference detected"):
        canonical_json({"a": looped})
    with pytest.raises(TypeError, match="Object of type set is not JSON serializable"):
        canonical_json({"a": {1}})
    assert canonical_json({"b": [1.5, None], "a": math.inf}) == '{"a":Infinity,"b":[1.5,null]}'


def _json_canonical(data):
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


SCALAR = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**80), max_value=2**80),  # past 64 bits too
    st.floats(),  # outside the range msgspec spells alike, NaN and infinities too
    st.text(),
)


@settings(max_examples=examples(1000), deadline=None)
@given(st.dictionaries(st.text(), SCALAR | st.lists(SCALAR, max_size=4), max_size=6))
def test_canonical_json_of_flat_arguments_is_json_s_whichever_writer_takes_them(data):
    # A step's arguments, mostly: msgspec writes these unless a float would be spelled
    # its own way, which json then writes.
    assert canonical_json(data) == _json_canonical(data)


def test_canonical_json_of_a_flat_dict_escapes_every_character_as_json_does():
    characters = [chr(point) for point in range(0x3000)] + ["\U0001f600", "\U0010ffff"]
    data = {character: character for character in characters}
    assert canonical_json(data) == _json_canonical(data)
    # sorted by code point, where UTF-16 order would put the astral key first
    assert canonical_json({"\uffff": 1, "\U0001f600": 2}) == '{"\uffff":1,"\U0001f600":2}'


@pytest.mark.parametrize(
    "value",
    [1e16, -1e16, 1e-5, -9.999e-5, 1e300, 5e-324, -0.0, math.nan, math.inf, 2**64 + 1],
)
def test_canonical_json_of_a_flat_dict_spells_numbers_as_json_does(value):
    data = {"n": value, "list": [value, 1]}
    assert canonical_json(data) == _json_canonical(data)


def test_what_msgspec_would_write_unlike_json_is_written_by_json():
    class Count(int):
        def __repr__(self) -> str:
            return "Count()"

    # a lone surrogate (msgspec cannot write it as UTF-8), a key that is not text, a
    # tuple, a subclass of int: json's own encoder writes each as it always did
    for data in ({"s": "\ud800"}, {1: "a", 2: "b"}, {"t": (1, 2)}, {"c": Count(3)}):
        assert canonical_json(data) == _json_canonical(data)
    with pytest.raises(TypeError, match="keys must be str, int, float, bool or None"):
        canonical_json({(1,): 2})


@pytest.mark.parametrize(
    "changed",
    [
        lambda *args: (_ for _ in ()).throw(TypeError("takes 10 arguments")),  # new signature
        lambda *args: lambda data, level: ["other", "text"],  # new behaviour
        lambda *args: lambda data: ["one argument"],  # a new call
        None,  # gone
    ],
    ids=["another signature", "another text", "another call", "missing"],
)
def test_a_changed_private_c_encoder_is_not_used(changed):
    from forge.plan.jsontext import _c_encoder

    assert _c_encoder(changed) is None


def test_the_c_encoder_of_this_python_writes_json_s_canonical_text():
    import json.encoder

    from forge.plan.jsontext import _CANONICAL_C, _c_encoder

    assert _CANONICAL_C is not None  # CPython 3.12 has it
    made = _c_encoder(json.encoder.c_make_encoder)
    data = {"b": [1, 2.5, None], "a": {"é": "x\n"}}
    assert made is not None
    assert "".join(made(data, 0)) == _json_canonical(data)


@pytest.mark.parametrize("fmt", ["json", "yaml", "mermaid"])
def test_reading_a_plan_leaves_the_interpreter_s_collector_alone(monkeypatch, fmt):
    # The collector is shared by a web process's threads: only the CLI may pause it.
    from forge.plan import dump_plan, from_data, load_plan

    text = dump_plan(from_data({"goal": "g", "steps": [{"id": "a", "tool": "noop"}]}), fmt)

    def touched() -> None:
        raise AssertionError("load_plan paused the garbage collector")

    monkeypatch.setattr(gc, "disable", touched)
    assert load_plan(text, fmt).steps[0].id == "a"
    assert load_plan(text.encode(), fmt).steps[0].id == "a"
