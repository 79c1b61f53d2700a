"""The editor past the compile rate (issue 26, defect 8): the live compiler's request
answered 429 ``throttled`` waits the ``Retry-After`` it was given and asks again, still
"Checking…", instead of saying it could not reach the compiler until the next edit.
"""

from __future__ import annotations

import itertools

import pytest
from playwright.sync_api import expect

from forge.plan import from_data
from plans import services

from .conftest import shoot
from .graph import problems, type_text, wait_compiled, wait_ready

pytestmark = pytest.mark.django_db(transaction=True)

PLAN = {
    "goal": "Fetch the changelog and publish the notes",
    "steps": [
        {"id": "fetch", "description": "Fetch the changelog", "tool": "noop"},
        {
            "id": "publish",
            "description": "Publish the notes",
            "tool": "noop",
            "depends_on": ["fetch"],
        },  # fmt: skip
    ],
}

YAML = """goal: Fetch the changelog and publish the notes
steps:
  - id: fetch
    description: {fetch}
    tool: noop
  - id: publish
    description: Publish the notes
    tool: {tool}
    depends_on: [fetch]
"""
_caches = itertools.count()


def test_a_throttled_compile_waits_its_turn_and_then_shows_the_problems(page, people, settings):
    settings.FORGE_API_COMPILE_RATE = "1/3s"
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": f"editor-throttle-{next(_caches)}",
        }
    }
    answers: list[int] = []
    page.on(
        "response",
        lambda response: (
            answers.append(response.status) if response.url.endswith("/api/v1/compile") else None
        ),
    )
    ada = people.make("ada", "author")
    version = services.create_plan(ada, "Release", from_data(PLAN))
    people.login(page, ada)
    page.goto(f"/plans/{version.plan_id}/edit/")
    wait_ready(page)
    page.get_by_role("button", name="YAML", exact=True).click()

    type_text(page, YAML.format(fetch="Fetch the changelog once", tool="noop"))
    wait_compiled(page)
    type_text(page, YAML.format(fetch="Fetch the changelog once", tool="no_such_tool"))
    expect(page.locator("#editor")).to_have_attribute("data-compile", "pending")
    shoot(page, "waiting-for-its-turn")

    expect(page.locator("#editor")).to_have_attribute("data-compile", "done", timeout=10_000)
    assert ("unknown_tool", "publish") in problems(page)
    assert 429 in answers and answers[-1] == 200
    shoot(page, "compiled-after-the-wait")
