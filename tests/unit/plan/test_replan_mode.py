"""The plan's ``replan`` field: who writes the next version when a run needs a replan."""

from __future__ import annotations

import pytest

from forge.errors import PlanDocumentError
from forge.plan import PLAN_SCHEMA, content_hash, from_data, to_data
from forge.plan.drift import detect_drift

BASE = {"goal": "Score", "steps": [{"id": "a", "tool": "echo"}]}


def test_replans_are_manual_by_default_and_left_out_so_older_hashes_hold():
    document = from_data(BASE)
    assert document.replan == "manual"
    assert "replan" not in to_data(document)
    assert content_hash(document) == content_hash(from_data({**BASE, "replan": "manual"}))


def test_auto_replans_round_trip_and_are_in_the_schema():
    document = from_data({**BASE, "replan": "auto"})
    assert document.replan == "auto"
    assert to_data(document)["replan"] == "auto"
    assert PLAN_SCHEMA["properties"]["replan"]["enum"] == ["manual", "auto"]


def test_another_replan_mode_is_refused_with_its_path():
    with pytest.raises(PlanDocumentError) as refused:
        from_data({**BASE, "replan": "whenever"})
    assert refused.value.path == "replan"


def test_turning_replans_automatic_is_drift_and_the_other_way_is_not():
    manual, auto = from_data(BASE), from_data({**BASE, "replan": "auto"})
    assert detect_drift(manual, auto) == ("replans became automatic (replan: auto)",)
    assert detect_drift(auto, manual) == ()
