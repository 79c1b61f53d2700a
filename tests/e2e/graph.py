"""Helpers to drive the plan graph with the mouse: where a node or an edge is on screen."""

from __future__ import annotations

from typing import Any

# Any page's graph: the editor's, a version's, a run's or a replan view's.
NODE_POINT = """(id) => {
  const f = window.forge;
  const cy = (f.editor || f.graph || f.run || f.replan).cy;
  const node = cy.getElementById(id);
  if (node.empty()) throw new Error(`no node ${id}`);
  const p = node.renderedPosition();
  const box = cy.container().getBoundingClientRect();
  return {x: box.left + p.x, y: box.top + p.y};
}"""

# A point on the edge's drawn curve that lies inside no node, so a click picks the edge.
EDGE_POINT = """(id) => {
  const cy = window.forge.editor.cy;
  const edge = cy.getElementById(id);
  if (edge.empty()) throw new Error(`no edge ${id}`);
  const box = cy.container().getBoundingClientRect();
  const nodes = cy.nodes().map((n) => n.renderedBoundingBox());
  const inside = (p, b) => p.x >= b.x1 - 4 && p.x <= b.x2 + 4 && p.y >= b.y1 - 4 && p.y <= b.y2 + 4;
  const free = (p) => !nodes.some((b) => inside(p, b));
  const candidates = [edge.renderedMidpoint()];
  const s = edge.renderedSourceEndpoint(), t = edge.renderedTargetEndpoint();
  for (const f of [0.25, 0.35, 0.65, 0.75]) {
    candidates.push({x: s.x + (t.x - s.x) * f, y: s.y + (t.y - s.y) * f});
  }
  const p = candidates.find(free) || candidates[0];
  return {x: box.left + p.x, y: box.top + p.y};
}"""


def settle(page: Any) -> None:
    """Wait until the editor's latest edit is drawn and its layout has stopped moving."""
    page.evaluate("() => window.forge.editor && window.forge.editor.settled()")


def node_point(page: Any, node_id: str) -> dict[str, float]:
    settle(page)
    return page.evaluate(NODE_POINT, node_id)


def drag_between(page: Any, source: str, target: str) -> None:
    """Press on ``source``, move onto ``target`` and release, like a person would."""
    start, end = node_point(page, source), node_point(page, target)
    page.mouse.move(start["x"], start["y"])
    page.mouse.down()
    page.mouse.move((start["x"] + end["x"]) / 2, (start["y"] + end["y"]) / 2, steps=6)
    page.mouse.move(end["x"], end["y"], steps=6)
    page.wait_for_timeout(120)  # edgehandles' hover delay
    page.mouse.up()


def click_node(page: Any, node_id: str) -> None:
    point = node_point(page, node_id)
    page.mouse.click(point["x"], point["y"])


def click_edge(page: Any, edge_id: str) -> None:
    settle(page)
    point = page.evaluate(EDGE_POINT, edge_id)
    page.mouse.click(point["x"], point["y"])


def wait_ready(page: Any) -> None:
    page.wait_for_selector("#editor[data-state=ready]")


def wait_compiled(page: Any) -> None:
    """Wait until the latest edit has been compiled and painted."""
    page.wait_for_selector("#editor[data-compile=done]")


def classes(page: Any, element_id: str) -> list[str]:
    return page.evaluate("(id) => window.forge.editor.cy.getElementById(id).classes()", element_id)


def problems(page: Any) -> list[tuple[str, str]]:
    """(data-code, data-nodes) of every item of the problems panel."""
    return [
        tuple(item)
        for item in page.locator("#problems li.problem").evaluate_all(
            "items => items.map(i => [i.dataset.code, i.dataset.nodes])"
        )
    ]


# The text view's code editor (CodeMirror 5 keeps its instance on its wrapper element).
TEXT_VALUE = "() => document.querySelector('#text-view .CodeMirror').CodeMirror.getValue()"


def text_value(page: Any) -> str:
    """The text in the editor's text view, as the author sees it."""
    return page.evaluate(TEXT_VALUE)


def type_text(page: Any, text: str) -> None:
    """Replace the text view's text the way a person would: select all, then type."""
    page.locator("#text-view .CodeMirror").click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(text)
