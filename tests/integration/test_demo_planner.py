"""``make run``'s default out of the box (issue 25, items 5 and 12): ``forge_serve`` (the
web server and one worker) over SQLite, with the demo's planner script as
``FORGE_PLANNER``, answers "New plan from a goal" with no model and no key: the worker
runs the planner's task, the proposal shows the retry of the script's first release-notes
answer (a cycle), and version 1 is ada's draft."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .deployment import REPO, Deployment, wait_for

pytestmark = pytest.mark.slow

DEMO_PLANNER = f"scripted:{REPO / 'examples' / 'demo' / 'planner.yaml'}"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Deployment]:
    running = Deployment("sqlite", tmp_path, extra_env={"FORGE_PLANNER": DEMO_PLANNER})
    try:
        yield running.start(serve=True)
    finally:
        running.stop()
        print(running.logs())  # pytest shows it only when the test fails


def test_forge_serve_answers_a_goal_with_the_demo_planner_as_the_authors_draft(served):
    asked = served.api("ada", "POST", "/plans/generate", {"goal": "Release notes for 3.0"})
    path = f"/plans/proposals/{asked['id']}"
    progress: list[str] = []

    def finished() -> dict | None:
        proposal = served.api("ada", "GET", path)
        progress.append(proposal["progress"])
        return proposal if proposal["status"] != "working" else None

    done = wait_for(finished, timeout=60, interval=0.3)

    assert (done["status"], done["version"], done["attempt"]) == ("proposed", 1, 2)
    assert "attempt 2 of 3: the last answer had a cycle" in progress
    version = served.api("ada", "GET", f"/plans/{done['plan']}/versions/1")
    assert (version["status"], version["author"]) == ("draft", "ada")
    assert version["document"]["goal"] == "Release notes for 3.0"
