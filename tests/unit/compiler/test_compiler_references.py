"""The compiler's check of data between steps: every wrong reference is
``invalid_reference`` (an unknown step, the step itself, a step that is not an
ancestor, a path the tool's declared output lacks, bad syntax); a value whose declared
type the argument's schema refuses is ``invalid_args``; the binding keeps the arguments
as written, so hashes and fingerprints are over the document."""

from __future__ import annotations

import hashlib

from forge.plan import canonical_json

READ = {
    "id": "read",
    "description": "Read the changelog for the notes",
    "tool": "file_read",
    "args": {"path": "CHANGELOG.txt"},
}


def _publish(content, *depends_on, **fields):
    return {
        "id": "publish",
        "description": "Write the release notes file",
        "depends_on": list(depends_on or ["read"]),
        "tool": "file_write",
        "args": {"path": "NOTES.md", "content": content},
        **fields,
    }


def _found(result, code):
    return [d.to_data() for d in result.diagnostics if d.code == code]


def test_a_reference_to_an_ancestors_declared_output_compiles_to_a_binding_as_written(
    compile_plan,
):
    content = {"$join": ["# 2.4\n\n", {"$from": "read", "path": "content"}]}

    result = compile_plan([READ, _publish(content)])

    assert result.ok, [d.message for d in result.diagnostics]
    binding = result.graph.nodes["publish"].binding
    written = {"path": "NOTES.md", "content": content}
    assert binding.concrete is False
    assert binding.args == written
    assert binding.args_hash == hashlib.sha256(canonical_json(written).encode()).hexdigest()
    assert [(r.step, r.path, r.at, r.part) for r in binding.references] == [
        ("read", ("content",), ("content",), 1)
    ]
    assert result.graph.to_data()["data_edges"] == [
        {"source": "read", "target": "publish", "path": "content", "at": "content"}
    ]


def test_a_plan_without_references_has_concrete_bindings_and_no_data_edges(step, compile_plan):
    result = compile_plan([step("a"), step("b", "a")])

    assert all(node.binding.concrete for node in result.graph.nodes.values())
    assert result.graph.to_data()["data_edges"] == []


def test_a_reference_to_a_step_that_does_not_exist_is_an_invalid_reference(compile_plan):
    result = compile_plan([READ, _publish({"$from": "raed", "path": "content"})])

    assert result.graph is None
    assert _found(result, "invalid_reference") == [
        {
            "code": "invalid_reference",
            "severity": "error",
            "message": "step 'publish': argument content refers to 'raed', which is not a "
            "step of this plan",
            "nodes": ["publish"],
            "edges": [],
        }
    ]


def test_a_reference_to_the_step_itself_is_an_invalid_reference(compile_plan):
    result = compile_plan([READ, _publish({"$from": "publish", "path": "diff"})])

    assert [d["message"] for d in _found(result, "invalid_reference")] == [
        "step 'publish': argument content refers to the step's own output, which does not exist yet"
    ]


def test_a_reference_to_a_step_that_is_not_an_ancestor_names_both_and_the_missing_edge(
    step, compile_plan
):
    other = step("other")
    result = compile_plan([READ, other, _publish({"$from": "other", "path": "section"})])

    assert _found(result, "invalid_reference") == [
        {
            "code": "invalid_reference",
            "severity": "error",
            "message": "step 'publish': argument content refers to 'other', which step "
            "'publish' does not depend on, so its output may not exist when 'publish' runs: "
            "add 'other' to its depends_on (or to an ancestor's)",
            "nodes": ["publish", "other"],
            "edges": [["other", "publish"]],
        }
    ]


def test_a_reference_to_an_ancestor_through_another_step_compiles(step, compile_plan):
    middle = step("middle", "read")

    result = compile_plan([READ, middle, _publish({"$from": "read", "path": "content"}, "middle")])

    assert result.ok, [d.message for d in result.diagnostics]


def test_a_path_the_tools_declared_output_lacks_is_an_invalid_reference(compile_plan):
    result = compile_plan([READ, _publish({"$from": "read", "path": "contents"})])

    assert _found(result, "invalid_reference") == [
        {
            "code": "invalid_reference",
            "severity": "error",
            "message": "step 'publish': argument content refers to read.contents, but the "
            "output 'file_read' declares has no such value: the output has no 'contents' "
            "(it has: content, path)",
            "nodes": ["publish", "read"],
            "edges": [["read", "publish"]],
        }
    ]


def test_a_path_into_an_echo_is_checked_against_the_echos_own_arguments(step, compile_plan):
    facts = step("facts", args={"summary": {"title": "2.4"}})

    good = compile_plan([facts, _publish({"$from": "facts", "path": "summary.title"}, "facts")])
    bad = compile_plan([facts, _publish({"$from": "facts", "path": "summary.body"}, "facts")])

    assert good.ok, [d.message for d in good.diagnostics]
    assert [d["message"] for d in _found(bad, "invalid_reference")] == [
        "step 'publish': argument content refers to facts.summary.body, but the output "
        "'echo' declares has no such value: summary has no 'body' (it has: title)"
    ]


def test_a_malformed_operator_is_an_invalid_reference(compile_plan):
    result = compile_plan([READ, _publish({"$from": "read", "path": "content", "x": 1})])

    assert [d["message"] for d in _found(result, "invalid_reference")] == [
        "step 'publish': content: a $from object has no other key ('x'); to pass such an "
        'object as it is, wrap it in {"$literal": ...}'
    ]


def test_a_declared_output_type_the_argument_refuses_is_invalid_args(compile_plan):
    count = {
        "id": "count",
        "description": "Count the changelog entries with wc",
        "tool": "shell",
        "args": {"argv": ["wc", "-l", "CHANGELOG.txt"]},
    }

    result = compile_plan([count, _publish({"$from": "count", "path": "exit_code"}, "count")])

    assert [d["message"] for d in _found(result, "invalid_args")] == [
        "step 'publish': arguments of 'file_write': content takes a string but "
        "count.exit_code is an integer"
    ]


def test_other_argument_errors_are_still_reported_beside_references(compile_plan):
    publish = _publish({"$from": "read", "path": "content"})
    publish["args"]["mode"] = "append"

    result = compile_plan([READ, publish])

    assert [d["message"] for d in _found(result, "invalid_args")] == [
        "step 'publish': arguments of 'file_write': the arguments: Additional properties are "
        "not allowed ('mode' was unexpected)"
    ]


def test_a_rule_a_value_of_the_right_type_may_break_is_left_to_run_time(compile_plan):
    # file_write's path has minLength 1: an empty stand-in would break it, a real
    # output may not, so only the type is checked now.
    publish = _publish("notes")
    publish["args"]["path"] = {"$from": "read", "path": "path"}

    result = compile_plan([READ, publish])

    assert result.ok, [d.message for d in result.diagnostics]


def test_an_http_get_whose_url_comes_from_an_earlier_step_still_only_reads(compile_plan):
    fetch = {
        "id": "publish",
        "description": "Fetch the page the changelog names",
        "depends_on": ["read"],
        "tool": "http_request",
        "args": {
            "method": "GET",
            "url": {"$join": ["https://", {"$from": "read", "path": "content"}]},
        },
    }
    send = {
        **fetch,
        "args": {"method": {"$from": "read", "path": "content"}, "url": "https://example.org"},
    }

    assert compile_plan([READ, fetch]).graph.nodes["publish"].binding.side_effect == "read"
    # a method known only at run time may be anything: decided as the tool's class
    sent = compile_plan([READ, send]).graph.nodes["publish"]
    assert sent.binding.side_effect == "external"
    assert sent.approval_reasons == ("external side effects always need a person's approval",)


def test_the_fingerprint_is_over_the_arguments_as_written(compile_plan):
    content = {"$from": "read", "path": "content"}
    first = compile_plan([READ, _publish(content)]).graph
    again = compile_plan([READ, _publish(dict(content))]).graph
    other = compile_plan([READ, _publish({"$from": "read", "path": "path"})]).graph

    assert first.nodes["publish"].fingerprint == again.nodes["publish"].fingerprint
    assert first.nodes["publish"].fingerprint != other.nodes["publish"].fingerprint
