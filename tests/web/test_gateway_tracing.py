"""Gateway calls are traced like worker calls (issue 30, item 1; SPEC section 12): a bound
call is a step span and an ``execute_tool`` span in its run's own trace, and an unbound
read is an ``execute_tool`` span of its own. The agent is the MCP SDK's client session and
the spans are read back from a real OTLP/HTTP receiver."""

from __future__ import annotations

from typing import Any

import pytest

from runs.models import Run

from .mcp_servers import approved
from .test_gateway_bound_calls import LOOK, agent, bound, calls, ledger, start
from .test_tracing import receiver, traced

pytestmark = pytest.mark.django_db(transaction=True)

__all__ = ["agent", "ledger", "receiver", "traced"]  # fixtures, used by name


def test_a_bound_call_is_a_step_and_a_tool_call_in_its_runs_trace(
    ledger: Any,
    author: Any,
    approver: Any,
    agent: Any,
    api_client: Any,
    token_for: Any,
    traced: Any,
) -> None:
    spans_received = traced()
    version = approved(author, approver, [LOOK])
    run_id = start(api_client(agent), version)

    [looked] = calls(token_for(agent), ("ledger.list_entries", {}, bound(run_id, "look")))

    assert not looked.is_error
    trace_id = Run.objects.get(pk=run_id).trace_context.split("-")[1]
    named = {span.name: span for span in spans_received()}
    assert set(named) == {"invoke_agent Ledger", "step look", "execute_tool ledger.list_entries"}
    assert {span.trace_id for span in named.values()} == {trace_id}
    step, tool = named["step look"], named["execute_tool ledger.list_entries"]
    assert tool.parent_id == step.span_id
    assert step.attributes["forge.step.result"] == "succeeded"
    assert tool.attributes["gen_ai.tool.name"] == "ledger.list_entries"
    assert (tool.attributes["forge.run.id"], tool.attributes["forge.step.id"]) == (
        str(run_id),
        "look",
    )


def test_an_unbound_read_is_a_tool_call_span_of_its_own(
    ledger: Any, agent: Any, token_for: Any, traced: Any
) -> None:
    spans_received = traced()

    [looked] = calls(token_for(agent), ("ledger.list_entries", {}, None))

    assert not looked.is_error
    [span] = spans_received()
    assert span.name == "execute_tool ledger.list_entries"
    assert span.parent_id == ""
    assert span.attributes["gen_ai.operation.name"] == "execute_tool"
