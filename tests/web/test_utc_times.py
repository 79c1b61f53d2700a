"""The pages' time format: TIME_ZONE = "UTC" and the templates' |date:"Y-m-d H:i" (to the
second, "Y-m-d H:i:s", on the run pages), on the cases the browser's helper shares
(tests/fixtures/utc_times.json; static/forge/js/model/time.js, tests/e2e/test_time_format.mjs):
a time reads alike whichever side wrote it."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from django.template import engines

CASES = json.loads((Path(__file__).parents[1] / "fixtures" / "utc_times.json").read_text())["cases"]


@pytest.mark.parametrize("case", CASES, ids=[case["value"] for case in CASES])
def test_the_templates_write_each_time_as_the_browser_does(case: dict[str, Any]):
    template = engines["django"].from_string(
        '{{ at|date:"Y-m-d H:i" }}|{{ at|date:"Y-m-d H:i:s" }}'
    )
    at = datetime.fromisoformat(case["value"])
    assert template.render({"at": at}) == f"{case['minutes']}|{case['seconds']}"
