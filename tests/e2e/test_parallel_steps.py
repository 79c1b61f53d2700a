"""The embedded default (``manage.py forge_serve``, what ``make run`` starts: the web
server and one worker with ``FORGE_WORKER_CONCURRENCY`` slots) in Chromium: two
independent steps of a plan run at once, and steps that wait for a free worker slot say
so on the run page. Screenshots go to test-artifacts/e2e/<test>/."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.integration.deployment import Deployment, wait_for

from . import deployed
from .conftest import shoot
from .deployed import open_run, step_statuses

pytestmark = pytest.mark.slow

TWO_WAITS = """
goal: Collect two slow supplier reports
steps:
  - {id: north, description: Wait for the northern report, tool: sleep, args: {seconds: 4}}
  - {id: south, description: Wait for the southern report, tool: sleep, args: {seconds: 4}}
  - {id: merge, description: Merge the two reports, tool: noop, depends_on: [north, south]}
"""


def _waits(count: int, seconds: float) -> str:
    steps = "\n".join(
        f"  - {{id: r{i}, description: Read report {i}, tool: sleep, args: {{seconds: {seconds}}}}}"
        for i in range(count)
    )
    join = ", ".join(f"r{i}" for i in range(count))
    return (
        f"goal: Read every report\nsteps:\n{steps}\n"
        f"  - {{id: merge, description: Merge the reports, tool: noop, depends_on: [{join}]}}\n"
    )


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    """A deployment served as ``make run`` serves it: its web process is replaced by
    ``manage.py forge_serve`` on the same port (web server and one default worker)."""
    for running in deployed.start(tmp_path_factory, "parallel-steps"):
        assert running.web is not None
        running.web.terminate()
        running.web.wait(10)
        serve = running._spawn(
            [sys.executable, "manage.py", "forge_serve", "--port", str(running.port)], "serve"
        )
        running.processes.append(serve)
        wait_for(running._answers, timeout=60)
        yield running


@pytest.fixture
def open_page(
    browser: Any, deployment: Deployment, request: pytest.FixtureRequest
) -> Iterator[Callable[[str], Any]]:
    yield from deployed.pages(browser, deployment, request)


def _when(event: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(event["created_at"])


def test_two_independent_steps_run_at_once_in_the_embedded_default(deployment, open_page):
    plan_id, number = deployment.approved_plan("Two reports", TWO_WAITS)
    ada = open_page("ada")
    run_id = deployment.start_run(plan_id, number)
    open_run(ada, run_id)

    ada.wait_for_function(
        "() => { const s = Object.fromEntries(window.forge.run.cy.nodes('[kind = \"step\"]')"
        ".map(n => [n.id(), n.data('status')])); "
        "return s.north === 'running' && s.south === 'running'; }",
        timeout=30_000,
    )
    shoot(ada, "both-running")
    statuses = step_statuses(ada)
    assert (statuses["north"], statuses["south"], statuses["merge"]) == (
        "running",
        "running",
        "pending",
    )

    expect(ada.locator("#run-page")).to_have_attribute("data-status", "succeeded", timeout=30_000)
    shoot(ada, "succeeded")
    events = deployment.api("ada", "GET", f"/runs/{run_id}/events")
    kinds = [(e["event_type"], e["step_id"]) for e in events]
    starts = [kinds.index(("step_started", s)) for s in ("north", "south")]
    ends = [kinds.index(("step_succeeded", s)) for s in ("north", "south")]
    assert max(starts) < min(ends), kinds  # both started before either finished
    by_kind = {e["event_type"]: e for e in events}
    took = (_when(by_kind["run_succeeded"]) - _when(by_kind["run_started"])).total_seconds()
    print(f"two 4 s branches ran in {took:.2f} s")  # bench.scale_out measures it properly


def test_steps_beyond_the_workers_slots_say_they_wait_for_a_free_slot(deployment, open_page):
    # Ten waits for one worker of eight slots (FORGE_WORKER_CONCURRENCY's default).
    plan_id, number = deployment.approved_plan("Ten reports", _waits(10, 10))
    ada = open_page("ada")
    run_id = deployment.start_run(plan_id, number)
    open_run(ada, run_id)

    # Every step waits for a slot until the worker claims eight (on a loaded machine that
    # can take longer than the notice's second), so the notice is read once it has.
    ada.wait_for_function(
        '() => window.forge.run.cy.nodes(\'[kind = "step"][status = "running"]\').length === 8',
        timeout=30_000,
    )
    notice = ada.locator("#slot-wait")
    expect(notice).to_be_visible(timeout=15_000)
    expect(notice).to_contain_text("Waiting for a free worker slot")
    statuses = step_statuses(ada)
    waiting = sorted(s for s, status in statuses.items() if status == "ready")
    assert len(waiting) == 2 and list(statuses.values()).count("running") == 8, statuses
    for step_id in waiting:
        expect(notice).to_contain_text(step_id)
    # The timeline's bar of the step opens its drawer too (the graph is crowded).
    ada.locator("#timeline").get_by_role("button", name=f"{waiting[0]}: Ready").click()
    expect(ada.locator("#drawer-title")).to_have_text(waiting[0])
    expect(ada.locator("[data-field=slot-wait]")).to_contain_text("Waiting for a free worker slot")
    expect(ada.locator("#step-drawer .drawer-meta")).to_contain_text("Attempt— (not started yet)")
    shoot(ada, "waiting-for-a-slot")

    expect(ada.locator("#run-page")).to_have_attribute("data-status", "succeeded", timeout=60_000)
    expect(notice).to_be_hidden()
