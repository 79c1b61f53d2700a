"""The pure checks of a bound call (forge.gateway.binding): which run and step a call's
_meta names, and each refusal code for a call that is not the step's approved one."""

from __future__ import annotations

import pytest

from forge.compiler import GraphCompiler
from forge.gateway.binding import (
    BoundCall,
    GatewayRefused,
    agents_step,
    arguments_hash,
    check_bound_call,
    same_arguments,
)
from forge.plan import from_data
from forge.runtime.calls import concrete_call
from forge.tools import Policy, PolicyEngine, ToolRegistry, ToolSpec, builtin_registry

RECORD = ToolSpec(
    "ledger.record_entry", "Record an amount under a key",
    {"type": "object", "properties": {"key": {"type": "string"}, "amount": {"type": "integer"}}},
    "mcp.ledger", side_effect="write", source="mcp:ledger",
)  # fmt: skip
GRAPH = (
    GraphCompiler(
        ToolRegistry([*builtin_registry(), RECORD]),
        PolicyEngine(Policy.allowing(["compute", "mcp.ledger"])),
    )
    .compile(
        from_data(
            {
                "goal": "Record the checked rent in the ledger",
                "steps": [
                    {"id": "read", "description": "Read the rent", "tool": "echo",
                     "args": {"rent": 900}},
                    {"id": "copy", "description": "Record the rent", "tool": "ledger.record_entry",
                     "args": {"key": "rent", "amount": {"$from": "read", "path": "rent"}},
                     "depends_on": ["read"]},
                ],
            }
        )
    )
    .graph
)  # fmt: skip
COPY = GRAPH.nodes["copy"]
CALL = BoundCall(7, "copy")


def check(**overrides):
    options = {
        "agent_run": True, "node": COPY, "status": "ready", "tool": "ledger.record_entry",
        "arguments": {"key": "rent", "amount": 900}, "resolved": resolved(),
    }  # fmt: skip
    options.update(overrides)
    check_bound_call(CALL, **options)


def resolved():
    return concrete_call(COPY.binding, {"read": {"rent": 900}})


def refusal(**overrides) -> tuple[str, str]:
    with pytest.raises(GatewayRefused) as refused:
        check(**overrides)
    return refused.value.code, refused.value.message


def test_the_approved_call_of_a_ready_step_passes_whatever_the_key_order():
    check(arguments={"amount": 900, "key": "rent"})


def test_meta_naming_neither_run_nor_step_is_an_unbound_call():
    assert BoundCall.from_meta(None) is None
    assert BoundCall.from_meta({"progressToken": 3}) is None


def test_meta_names_a_run_and_a_step():
    assert BoundCall.from_meta({"forge/run": "7", "forge/step": "copy"}) == CALL
    assert BoundCall.from_meta({"forge/run": 7, "forge/step": "copy"}) == CALL


@pytest.mark.parametrize(
    "meta",
    [
        {"forge/run": 7},
        {"forge/step": "copy"},
        {"forge/run": True, "forge/step": "copy"},
        {"forge/run": "seven", "forge/step": "copy"},
        {"forge/run": 0, "forge/step": "copy"},
        {"forge/run": 7, "forge/step": ""},
        {"forge/run": 7, "forge/step": ["copy"]},
    ],
)
def test_meta_with_half_a_binding_or_a_bad_id_is_refused(meta):
    with pytest.raises(GatewayRefused) as refused:
        BoundCall.from_meta(meta)

    assert refused.value.code == "invalid_meta"


def test_a_run_of_the_workers_is_refused_first():
    assert refusal(agent_run=False)[0] == "run_not_agent"


def test_an_unknown_step_another_tool_or_a_built_in_step_is_not_in_the_plan():
    assert refusal(node=None) == ("not_in_plan", "run 7's plan has no step 'copy'")
    assert refusal(tool="ledger.delete_entry") == (
        "not_in_plan",
        "step 'copy' of run 7 calls 'ledger.record_entry', not 'ledger.delete_entry'",
    )
    assert refusal(node=GRAPH.nodes["read"], tool="echo")[0] == "not_in_plan"


@pytest.mark.parametrize("status", ["succeeded", "failed", "invalid", "skipped", "cancelled"])
def test_a_step_that_had_its_call_is_done(status):
    assert refusal(status=status)[0] == "step_done"


@pytest.mark.parametrize(
    ("status", "why"),
    [
        ("pending", "its dependencies have not all succeeded"),
        ("awaiting_approval", "it waits for a person's approval"),
        ("running", "it cannot be called now"),
        ("needs_reconciliation", "it cannot be called now"),
    ],
)
def test_a_step_that_is_not_ready_says_why(status, why):
    assert refusal(status=status) == (
        "step_not_ready",
        f"step 'copy' of run 7 is {status}, not ready: {why}",
    )


def test_other_arguments_than_the_resolved_ones_are_a_mismatch():
    assert refusal(arguments={"key": "rent", "amount": 901})[0] == "args_mismatch"
    assert refusal(arguments={"key": "rent", "amount": 900.0})[0] == "args_mismatch"
    # the reference as written is not the approved value either
    written = {"key": "rent", "amount": {"$from": "read", "path": "rent"}}
    assert refusal(arguments=written)[0] == "args_mismatch"


def test_arguments_compare_and_hash_as_canonical_json():
    assert same_arguments({"a": 1, "b": [1, 2]}, {"b": [1, 2], "a": 1})
    assert not same_arguments({"a": [1, 2]}, {"a": [2, 1]})
    assert arguments_hash({"a": 1, "b": 2}) == arguments_hash({"b": 2, "a": 1})


def test_only_mcp_tool_steps_are_the_agents():
    assert agents_step(COPY)
    assert not agents_step(GRAPH.nodes["read"])
