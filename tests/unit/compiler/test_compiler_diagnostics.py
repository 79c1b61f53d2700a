"""Diagnostics as data: one table of codes and severities, one JSON shape, one order."""

from __future__ import annotations

import pytest

from forge.compiler import CODES, SEVERITIES, Diagnostic

SPEC_SECTION_4 = {
    "cycle": "error",
    "missing_dependency": "error",
    "duplicate_id": "error",
    "unknown_tool": "error",
    "unauthorized_tool": "error",
    "invalid_args": "error",
    "nonterminal_deliverable": "error",
    "missing_deliverable": "error",
    "unreachable_deliverable": "warning",
    "budget_exceeded_statically": "warning",
    "unverifiable_done_when": "warning",
    "vague_step": "warning",
    "repeats_side_effect": "warning",
    "approval_required": "info",
}


def test_every_code_of_the_spec_has_the_spec_severity_plus_the_deviations():
    deviations = {
        "invalid_check": "error",
        "tool_unavailable": "error",
        "invalid_reference": "error",
        "agent_without_tools": "error",
        "invalid_milestone": "error",
        "milestone_out_of_order": "error",
        "host_not_allowed": "error",
        "missing_done_when": "warning",
        "missing_rollback_hint": "warning",
        "plan_without_milestones": "warning",
        "flattened_decision": "warning",
    }
    assert dict(SEVERITIES) == {**SPEC_SECTION_4, **deviations}
    assert set(CODES) == set(SEVERITIES)


def test_a_diagnostic_takes_its_severity_from_the_table():
    diagnostic = Diagnostic.of("vague_step", "step 'a' has no description", ["a"])

    assert diagnostic == Diagnostic("vague_step", "warning", "step 'a' has no description", ("a",))


def test_a_code_missing_from_the_table_is_refused():
    with pytest.raises(KeyError):
        Diagnostic.of("looks_odd", "hmm")


def test_a_diagnostic_as_data_has_exactly_the_api_fields():
    diagnostic = Diagnostic.of(
        "missing_dependency", "step 'b' depends on 'x'", ["b", "x"], [("x", "b")]
    )

    assert diagnostic.to_data() == {
        "code": "missing_dependency",
        "severity": "error",
        "message": "step 'b' depends on 'x'",
        "nodes": ["b", "x"],
        "edges": [["x", "b"]],
    }


def test_diagnostics_come_errors_first_then_by_code_then_in_document_order(step, compile_plan):
    result = compile_plan(
        [
            step("b", description="do it"),
            step("a", "b", tool="teleport", description="execute task"),
            step("c", "a", "ghost", tool="shell", args={"argv": ["make"]}),
        ],
        requires_approval_before=["shell"],
    )

    assert [(d.code, d.nodes[0]) for d in result.diagnostics] == [
        ("missing_dependency", "c"),
        ("unknown_tool", "a"),
        ("vague_step", "b"),
        ("vague_step", "a"),
        ("missing_rollback_hint", "c"),
        ("approval_required", "c"),
    ]


def test_import_warnings_join_a_compile_result_in_the_table_order_and_leave_ok_alone():
    # Issue 25, item 8: what reading the source warns of is answered with the diagnostics.
    from forge.compiler import GraphCompiler
    from forge.plan import import_plan
    from forge.tools import DEFAULT_POLICY, PolicyEngine, builtin_registry

    imported = import_plan(
        "flowchart TD\n  d{Ready?} -->|yes| go[Ship the release]\n  d -->|no| wait\n", "mermaid"
    )
    result = GraphCompiler(builtin_registry(), PolicyEngine(DEFAULT_POLICY)).compile(
        imported.document
    )

    noted = result.noting(imported.warnings)

    assert noted.ok == result.ok and noted.graph is result.graph
    [flattened] = [d for d in noted.diagnostics if d.code == "flattened_decision"]
    warning = imported.warnings[0]
    assert flattened.to_data() == {
        "code": "flattened_decision",
        "severity": "warning",
        "message": warning.message,
        "nodes": list(warning.nodes),
        "edges": [list(edge) for edge in warning.edges],
        "hint": warning.hint,
    }
    assert SEVERITIES["flattened_decision"] == "warning"
    severities = [d.severity for d in noted.diagnostics]
    assert severities == sorted(severities, key=["error", "warning", "info"].index)
    assert noted.to_data()["diagnostics"] == [d.to_data() for d in noted.diagnostics]
    assert result.noting(()) is result
