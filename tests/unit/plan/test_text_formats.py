"""JSON and YAML syntax: errors with positions, and data that JSON cannot hold refused."""

import pytest

from forge.errors import PlanDocumentError
from forge.plan import (
    EXPORT_FORMATS,
    IMPORT_FORMATS,
    PlanDocument,
    Step,
    detect_format,
    dump_plan,
    load_plan,
)


def test_a_json_syntax_error_names_its_line_and_column():
    with pytest.raises(PlanDocumentError) as caught:
        load_plan('{\n  "goal": "g",\n  "steps": [,]\n}', "json")

    assert caught.value.code == "invalid_json"
    assert caught.value.message == ("invalid JSON at line 3, column 13: Expecting value")
    assert caught.value.path == "line 3"


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_json_constants_that_are_not_numbers_are_refused(constant):
    with pytest.raises(PlanDocumentError, match=f"{constant} is not a JSON number") as caught:
        load_plan(f'{{"goal": "g", "steps": [{{"id": "a", "args": {{"x": {constant}}}}}]}}', "json")

    assert caught.value.code == "invalid_json"


def test_bytes_that_are_not_utf8_are_refused():
    with pytest.raises(PlanDocumentError, match="not valid UTF-8") as caught:
        load_plan(b'{"goal": "\xff", "steps": []}', "json")

    assert caught.value.code == "invalid_encoding"


@pytest.mark.parametrize("format", ["json", "yaml", "mermaid"])
@pytest.mark.parametrize("source", ["", "  \n\t\n", b"", b"\xef\xbb\xbf\n"])
def test_an_empty_source_is_said_to_be_empty_in_every_format(format, source):
    with pytest.raises(PlanDocumentError) as caught:
        load_plan(source, format)

    assert (caught.value.code, caught.value.message) == (
        "invalid_document",
        "the document is empty: a plan needs a goal and its steps",
    )


def test_yaml_of_nothing_but_comments_is_empty_and_an_explicit_null_is_not():
    with pytest.raises(PlanDocumentError, match="^the document is empty"):
        load_plan("# a plan, one day\n\n", "yaml")
    with pytest.raises(PlanDocumentError, match="^must be an object, not null$"):
        load_plan("null\n", "yaml")


def test_a_leading_byte_order_mark_is_ignored():
    source = '\ufeff{"goal": "g", "steps": []}'

    assert load_plan(source, "json") == PlanDocument(goal="g", steps=())
    assert load_plan(source.encode(), "yaml") == PlanDocument(goal="g", steps=())


def test_a_yaml_syntax_error_names_its_line():
    with pytest.raises(PlanDocumentError) as caught:
        load_plan("goal: g\nsteps:\n  - id: a\n   depends_on: [\n", "yaml")

    assert caught.value.code == "invalid_yaml"
    assert caught.value.message.startswith("line 4, column ")


def test_two_yaml_documents_in_one_source_are_refused():
    with pytest.raises(PlanDocumentError, match="single document") as caught:
        load_plan("goal: g\nsteps: []\n---\ngoal: h\nsteps: []\n", "yaml")

    assert caught.value.code == "invalid_yaml"


def test_yaml_dates_stay_strings_as_they_would_in_json():
    document = load_plan("goal: g\nsteps:\n  - {id: a, args: {since: 2024-01-31, op: =}}\n", "yaml")

    assert document.steps[0].args == {"since": "2024-01-31", "op": "="}


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("goal: g\nsteps:\n  - {id: a, args: {1: one}}\n", "mapping keys must be strings"),
        ("goal: g\nsteps:\n  - {id: a, args: {on: push}}\n", "mapping keys must be strings"),
        ("goal: g\nsteps:\n  - {id: a, args: {x: .nan}}\n", "'.nan' is not a finite number"),
        ("goal: g\nsteps:\n  - {id: a, args: {x: -.inf}}\n", "'-.inf' is not a finite number"),
    ],
)
def test_yaml_that_json_could_not_hold_is_refused(source, message):
    with pytest.raises(PlanDocumentError, match=message) as caught:
        load_plan(source, "yaml")

    assert caught.value.code == "invalid_yaml"
    assert caught.value.message.startswith("line 3, ")


def test_an_unknown_format_is_refused_with_the_known_ones():
    with pytest.raises(PlanDocumentError, match="use one of json, yaml, mermaid$") as caught:
        load_plan("{}", "toml")
    assert caught.value.code == "unsupported_format"

    with pytest.raises(PlanDocumentError, match="use one of json, yaml, mermaid, dot$"):
        dump_plan(PlanDocument(goal="g", steps=()), "svg")
    assert (IMPORT_FORMATS, EXPORT_FORMATS) == (
        ("json", "yaml", "mermaid"),
        ("json", "yaml", "mermaid", "dot"),
    )


@pytest.mark.parametrize(
    ("source", "filename", "expected"),
    [
        ("anything", "plan.json", "json"),
        ("anything", "PLAN.YML", "yaml"),
        ("anything", "plan.yaml", "yaml"),
        ("anything", "flow.mmd", "mermaid"),
        ("anything", "flow.mermaid", "mermaid"),
        ('\ufeff  {"goal": "g"}', None, "json"),
        (b"[1, 2]", None, "json"),
        ("goal: g\nsteps: []\n", None, "yaml"),
        ("---\ngoal: g\n", None, "yaml"),
        ("%% a comment\nflowchart LR\n  a --> b\n", None, "mermaid"),
        ("graph TD;\n  a --> b\n", None, "mermaid"),
        (b"---\ntitle: Plan\n---\nflowchart TD\n  a\n", None, "mermaid"),
        ("", None, "yaml"),
    ],
)
def test_detect_format_uses_the_extension_then_the_content(source, filename, expected):
    assert detect_format(source, filename) == expected


@pytest.mark.parametrize(
    ("source", "filename"), [("x", "plan.dot"), ("x", "plan.gv"), ("digraph plan {\n}\n", None)]
)
def test_detect_format_refuses_dot_which_is_export_only(source, filename):
    with pytest.raises(PlanDocumentError, match="DOT is an export format") as caught:
        detect_format(source, filename)

    assert caught.value.code == "unsupported_format"


def test_wrongly_typed_empty_values_are_refused_rather_than_read_as_defaults():
    for field, value in [("args", []), ("depends_on", ""), ("tools_allowed", False)]:
        source = {"goal": "g", "steps": [{"id": "a", field: value}]}
        with pytest.raises(PlanDocumentError, match=f"steps.a.{field}"):
            load_plan(repr(source).replace("'", '"').replace("False", "false"), "json")

    assert load_plan('{"goal": "g", "steps": [{"id": "a", "args": null}]}', "json") == (
        PlanDocument(goal="g", steps=(Step(id="a"),))
    )
