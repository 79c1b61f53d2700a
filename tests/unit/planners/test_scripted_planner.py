"""ScriptedPlanner: prepared versions handed out in order, for tests and demos."""

from __future__ import annotations

import pytest

from forge.plan import from_data
from forge.planners import Observation, PlannerExhausted, ScriptedPlanner

V1 = from_data({"goal": "Report", "steps": [{"id": "a", "tool": "noop"}]})
V2 = from_data({"goal": "Report", "steps": [{"id": "b", "tool": "noop"}]})


def test_it_hands_out_its_documents_in_order_and_keeps_what_it_observed():
    planner = ScriptedPlanner([V1, V2], name="scripted:demo")
    replan = Observation(current=V1, current_version=1, failed_step="a", error="boom")

    first = planner.plan("Write the report", Observation())
    second = planner.plan("Write the report", replan)

    assert (first.document, first.parent_version, first.reason) == (
        V1,
        None,
        "plan for: Write the report",
    )
    assert (second.document, second.parent_version) == (V2, 1)
    assert second.reason == "step 'a' failed: boom"
    assert second.planner == "scripted:demo"
    assert planner.observations == [Observation(), replan]


def test_a_planner_out_of_documents_says_so_with_its_code():
    planner = ScriptedPlanner([])

    with pytest.raises(PlannerExhausted) as caught:
        planner.plan("task", Observation())

    assert caught.value.code == "planner_exhausted"
