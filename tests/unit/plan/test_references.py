"""Data between steps, the syntax (``forge.plan.references``): ``$from`` names an earlier
output, ``$join`` makes text of parts, ``$literal`` escapes an object that would read as
an operator; ``substitute`` replaces them with values."""

from __future__ import annotations

import pytest

from forge.plan.references import (
    Reference,
    ReferenceValueError,
    location_text,
    lookup,
    scan,
    substitute,
)


def test_a_from_object_is_a_reference_with_a_dotted_path_at_its_argument():
    template = scan({"content": {"$from": "read", "path": "matches.0.text"}, "path": "out.md"})

    assert template.operators is True
    assert template.problems == ()
    assert template.references == (Reference("read", ("matches", "0", "text"), ("content",)),)
    assert template.references[0].source_text == "read.matches.0.text"


def test_a_reference_without_a_path_takes_the_whole_output():
    [reference] = scan({"data": {"$from": "read"}}).references

    assert reference.path == ()
    assert reference.source_text == "read"


def test_a_path_given_as_a_list_reaches_keys_that_hold_dots():
    [reference] = scan({"v": {"$from": "fetch", "path": ["headers", "x.request.id"]}}).references

    assert reference.path == ("headers", "x.request.id")
    assert reference.path_text == '["headers", "x.request.id"]'


def test_references_are_found_in_nested_objects_lists_and_join_parts_in_order():
    args = {
        "argv": ["echo", {"$from": "a", "path": "stdout"}],
        "env": {"NOTE": {"$join": ["n=", {"$from": "b", "path": "n"}, "!"]}},
    }

    references = scan(args).references

    assert [(r.step, r.at, r.part) for r in references] == [
        ("a", ("argv", 1), None),
        ("b", ("env", "NOTE"), 1),
    ]
    assert [location_text(r.at) for r in references] == ["argv[1]", "env.NOTE"]


def test_arguments_without_operators_have_no_template():
    template = scan({"path": "notes.md", "meta": {"$schema": "kept", "from": "x"}})

    assert template.operators is False
    assert template.references == ()


def test_a_literal_escapes_an_object_with_a_from_key_and_substitute_unwraps_it():
    args = {"body": {"$literal": {"$from": "not a step", "path": 3}}}

    template = scan(args)

    assert template.operators is True
    assert template.references == ()
    assert template.problems == ()
    assert substitute(args, lambda r: pytest.fail("no reference")) == {
        "body": {"$from": "not a step", "path": 3}
    }


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"a": {"$from": "read", "extra": 1}}, "a: a $from object has no other key ('extra')"),
        ({"a": {"$from": 3}}, "a: $from must name a step, not 3"),
        ({"a": {"$from": "read", "path": "x..y"}}, "a: path 'x..y' has an empty segment"),
        ({"a": {"$from": "read", "path": [-1]}}, "a: a list index in a path is 0 or more"),
        ({"a": {"$join": "text"}}, "a: $join takes a list of parts"),
        ({"a": {"$join": [{"k": 1}]}}, "a: part 0 of its $join must be a string"),
        ({"a": {"$join": ["x"], "b": 1}}, "a: a $join object has no other key ('b')"),
        ({"a": {"$literal": 1, "b": 1}}, "a: a $literal object has no other key ('b')"),
        ({"$from": "read"}, "the arguments cannot themselves be an operator"),
    ],
)
def test_a_malformed_operator_is_a_problem_naming_its_argument(args, message):
    problems = scan(args).problems

    assert len(problems) == 1
    assert problems[0].message.startswith(message)


def test_lookup_walks_keys_and_list_indexes():
    output = {"matches": [{"text": "first"}, {"text": "second"}]}

    assert lookup(output, ("matches", "1", "text")) == "second"
    assert lookup(output, ()) is output


def test_lookup_names_the_first_segment_that_is_not_there():
    with pytest.raises(ReferenceValueError) as raised:
        lookup({"matches": [{"text": "x"}]}, ("matches", "4", "text"))

    assert raised.value.code == "unresolved_reference"
    assert raised.value.message == "matches has no '4' (it is a list of 1 item(s))"


def test_substitute_puts_values_in_place_and_joins_text_numbers_and_booleans():
    args = {
        "content": {"$join": ["# ", {"$from": "t", "path": "title"}, " (", {"$from": "n"}, ")"]},
        "keep": [1, {"$from": "t", "path": "flag"}],
    }
    outputs = {"t": {"title": "2.4", "flag": True}, "n": 3}

    resolved = substitute(args, lambda r: lookup(outputs[r.step], r.path))

    assert resolved == {"content": "# 2.4 (3)", "keep": [1, True]}
    assert args["content"]["$join"][1] == {"$from": "t", "path": "title"}  # not changed


def test_a_join_refuses_a_part_whose_value_is_an_object():
    args = {"content": {"$join": ["x", {"$from": "t"}]}}

    with pytest.raises(ReferenceValueError) as raised:
        substitute(args, lambda r: {"title": "2.4"})

    assert raised.value.code == "invalid_args"
    assert raised.value.message == (
        "content: part 1 of its $join refers to t, which is an object, not text or a number"
    )
