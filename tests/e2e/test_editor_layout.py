"""Placing steps on the graph (issue 12, problem 8).

Problem 8 as it was: above 150 steps long edges cut through nodes; clicking a problem
selected a node too small to see; nodes could not be placed by hand and positions were not
kept; the legend drew a real step with an error like a missing step.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from forge.plan import from_data
from plans import services
from plans.models import PlanVersion

from .conftest import shoot
from .graph import node_point, settle, wait_compiled, wait_ready

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _reaches_example_com(settings):
    # The plan's first step GETs https://example.com/changelog: this deployment lets
    # http_request reach it (otherwise the step would be host_not_allowed).
    settings.FORGE_HTTP_ALLOWED_HOSTS = ["example.com"]


PLAN = {
    "goal": "Fetch the changelog and publish the notes",
    "deliverable": "publish",
    "steps": [
        {
            "id": "fetch",
            "description": "Fetch the changelog from the release server",
            "depends_on": [],
            "tool": "http_request",
            "args": {"method": "GET", "url": "https://example.com/changelog"},
            "done_when": {"required_keys": ["status"], "checks": ["status == `200`"]},
        },
        {
            "id": "check",
            "description": "Read the notes template",
            "depends_on": ["fetch"],
            "tool": "file_read",
            "args": {"path": "TEMPLATE.md"},
            "done_when": {"required_keys": ["content"]},
        },
        {
            "id": "publish",
            "description": "Write the release notes file",
            "depends_on": ["check"],
            "tool": "file_write",
            "args": {"path": "NOTES.md", "content": "# Notes"},
            "done_when": {"required_keys": ["committed"]},
        },
    ],
}


def _large_plan(layers: int = 22, width: int = 10, broken: str | None = None) -> dict:
    """layers x width steps: each depends on one step of the layer above and every third
    one also on a step three layers up, so long edges must pass rows of steps."""
    steps = []
    for layer in range(layers):
        for column in range(width):
            deps = []
            if layer:
                deps.append(f"s{layer - 1}_{(column * 3 + 1) % width}")
            if layer >= 3 and column % 3 == 0:
                deps.append(f"s{layer - 3}_{(column + 5) % width}")
            step_id = f"s{layer}_{column}"
            steps.append(
                {
                    "id": step_id,
                    "description": f"Process part {column} of stage {layer}",
                    "depends_on": deps,
                    "tool": "teleport" if step_id == broken else "noop",
                }
            )
    return {"goal": "A large batch", "steps": steps}


def _open(page, people, document, name="Plan"):
    ada = people.make("ada", "author")
    version = services.create_plan(ada, name, from_data(document))
    people.login(page, ada)
    page.goto(f"/plans/{version.plan_id}/edit/")
    wait_ready(page)
    return version


def _position(page, node_id):
    return page.evaluate("(id) => window.forge.editor.cy.getElementById(id).position()", node_id)


# Every dependency edge as drawn (its end points and the bends between them), sampled every
# 8 px; returns the edges whose line passes through a step other than its own two ends.
CROSSINGS = """() => {
  const cy = window.forge.editor.cy;
  const boxes = cy.nodes('[base]').map((n) =>
    ({id: n.id(), b: n.boundingBox({includeLabels: false})}));
  const crossed = [];
  cy.edges('[base]').filter((e) => e.data('kind') !== 'data').forEach((edge) => {
    const bends = edge.segmentPoints() || edge.controlPoints() || [];
    const points = [edge.sourceEndpoint(), ...bends, edge.targetEndpoint()];
    const ends = new Set([edge.source().id(), edge.target().id()]);
    for (let i = 1; i < points.length; i += 1) {
      const a = points[i - 1], b = points[i];
      const steps = Math.max(1, Math.ceil(Math.hypot(b.x - a.x, b.y - a.y) / 8));
      for (let k = 0; k <= steps; k += 1) {
        const p = {x: a.x + (b.x - a.x) * k / steps, y: a.y + (b.y - a.y) * k / steps};
        const hit = boxes.find(({id, b: box}) => !ends.has(id) && p.x > box.x1 + 2
          && p.x < box.x2 - 2 && p.y > box.y1 + 2 && p.y < box.y2 - 2);
        if (hit) { crossed.push(`${edge.id()} through ${hit.id}`); return; }
      }
    }
  });
  return {crossed, edges: cy.edges('[base]').length, nodes: cy.nodes('[base]').length};
}"""


def test_edges_of_a_large_plan_route_around_its_steps(page, people):
    _open(page, people, _large_plan(), name="Large")
    settle(page)
    result = page.evaluate(CROSSINGS)
    assert result["nodes"] == 220
    assert result["edges"] > 280
    assert result["crossed"] == []
    page.locator(".toolbar [data-action=fit]").click()
    shoot(page, "large-routed")


def test_clicking_a_problem_zooms_to_its_step_so_it_can_be_seen(page, people):
    _open(page, people, _large_plan(broken="s15_4"), name="Large")
    wait_compiled(page)
    page.locator(".toolbar [data-action=fit]").click()
    page.wait_for_timeout(400)
    assert page.evaluate("window.forge.editor.cy.zoom()") < 0.3
    page.locator("#problems li.problem[data-code=unknown_tool]").click()
    page.wait_for_timeout(600)
    view = page.evaluate(
        """() => { const cy = window.forge.editor.cy; const n = cy.getElementById('s15_4');
        const b = n.renderedBoundingBox({includeLabels: false});
        return {zoom: cy.zoom(), selected: n.selected(), b, w: cy.width(), h: cy.height()}; }"""
    )
    assert view["selected"]
    assert view["zoom"] >= 0.75, "readable: the step's text is big enough to read"
    box = view["b"]
    assert 0 <= box["x1"] and box["x2"] <= view["w"] and 0 <= box["y1"] and box["y2"] <= view["h"]
    shoot(page, "problem-zoomed")


def test_steps_placed_by_hand_are_kept_with_the_version_outside_its_content_hash(page, people):
    v1 = _open(page, people, PLAN)
    settle(page)
    auto = _position(page, "publish")

    # Move mode: dragging a step moves it (in connect mode it draws a dependency).
    page.get_by_role("button", name="Move steps").click()
    start = node_point(page, "publish")
    page.mouse.move(start["x"], start["y"])
    page.mouse.down()
    page.mouse.move(start["x"] + 120, start["y"] + 40, steps=8)
    page.mouse.move(start["x"] + 260, start["y"] + 60, steps=8)
    page.mouse.up()
    moved = _position(page, "publish")
    assert moved["x"] > auto["x"] + 100
    assert page.evaluate("window.forge.editor.cy.edges().length") == 2, "no edge drawn"
    expect(page.locator("#dirty-flag")).to_be_visible()

    page.locator("#save-button").click()
    page.locator("#save-dialog button[type=submit]").click()
    expect(page.locator("#dirty-flag")).to_be_hidden()
    v2 = PlanVersion.objects.get(plan=v1.plan, number=2)
    assert v2.content_hash == v1.content_hash
    assert "layout" not in v2.document
    saved = v2.layout["positions"]["publish"]
    assert abs(saved[0] - moved["x"]) < 1 and abs(saved[1] - moved["y"]) < 1
    assert set(v2.layout["positions"]) == {"fetch", "check", "publish"}

    page.reload()
    wait_ready(page)
    settle(page)
    again = _position(page, "publish")
    assert abs(again["x"] - moved["x"]) < 1 and abs(again["y"] - moved["y"]) < 1
    shoot(page, "kept")

    # Auto-layout is a button: the steps go back where the layout puts them.
    page.get_by_role("button", name="Auto-layout").click()
    settle(page)
    page.wait_for_timeout(400)
    back = _position(page, "publish")
    assert abs(back["x"] - auto["x"]) < 1 and abs(back["y"] - auto["y"]) < 1
    expect(page.locator("#dirty-flag")).to_be_visible()
    page.locator("#save-button").click()
    page.locator("#save-dialog button[type=submit]").click()
    expect(page.locator("#dirty-flag")).to_be_hidden()
    v3 = PlanVersion.objects.get(plan=v1.plan, number=3)
    assert v3.layout == {}
    assert v3.content_hash == v1.content_hash


def test_the_legend_tells_a_step_with_an_error_from_a_missing_step(page, people):
    document = {
        "goal": "g",
        "steps": [
            {"id": "fetch", "description": "Fetch the file", "tool": "teleport"},
            {"id": "publish", "description": "Publish it", "depends_on": ["ghosty"]},
        ],
    }
    _open(page, people, document)
    wait_compiled(page)
    settle(page)
    expect(page.locator("#problems li[data-code=missing_dependency]")).to_have_count(1)
    painted = "() => window.forge.editor.cy.getElementById('fetch').hasClass('error')"
    for _ in range(50):  # the paint follows the compile within a frame
        if page.evaluate(painted):
            break
        page.wait_for_timeout(100)
    look = page.evaluate(
        """() => { const cy = window.forge.editor.cy;
        const s = (id) => { const n = cy.getElementById(id); return {
          border: n.style('border-color'), style: n.style('border-style'),
          fill: n.style('background-opacity'), label: n.data('label')}; };
        return {error: s('fetch'), ghost: s('ghost:ghosty')}; }"""
    )
    assert look["error"]["style"] == "solid"
    assert look["ghost"]["style"] == "dashed"
    assert look["ghost"]["border"] != look["error"]["border"]
    assert look["ghost"]["fill"] != look["error"]["fill"]
    assert "missing" in look["ghost"]["label"]

    legend = page.locator(".legend")
    expect(legend).to_contain_text("Step with an error")
    expect(legend).to_contain_text("Missing step")
    swatches = page.evaluate(
        """() => Object.fromEntries(['error', 'ghost'].map((k) => {
          const s = getComputedStyle(document.querySelector(`.legend .swatch.node.${k}`));
          return [k, [s.borderTopStyle, s.borderTopColor, s.backgroundColor]]; }))"""
    )
    assert swatches["error"][0] == "solid" and swatches["ghost"][0] == "dashed"
    assert swatches["error"][1] != swatches["ghost"][1]
    assert swatches["error"][2] != swatches["ghost"][2]
    shoot(page, "legend")
