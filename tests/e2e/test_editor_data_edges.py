"""Data between steps in the browser: the editor draws a dashed, labelled data edge from
each step whose output another step's arguments take ($from), lists them in the step
panel, paints a wrong reference, renames references with their step, and keeps a
reference as a chip in the argument form; the version page draws the edges too."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from forge.plan import from_data
from plans import services

from .conftest import shoot
from .graph import classes, click_node, problems, settle, wait_compiled, wait_ready

pytestmark = pytest.mark.django_db(transaction=True)

CONTENT = {"$join": ["# 2.4\n\n", {"$from": "read", "path": "content"}]}
PLAN = {
    "goal": "Draft the release notes for version 2.4 from the changelog",
    "deliverable": "publish",
    "steps": [
        {
            "id": "read",
            "description": "Read the changelog for the notes",
            "depends_on": [],
            "tool": "file_read",
            "args": {"path": "CHANGELOG.txt"},
        },
        {
            "id": "count",
            "description": "Count the changelog entries with wc",
            "depends_on": ["read"],
            "tool": "shell",
            "args": {"argv": ["wc", "-l", {"$from": "read", "path": "path"}]},
        },
        {
            "id": "publish",
            "description": "Publish the release notes built from the changelog",
            "depends_on": ["count"],
            "tool": "file_write",
            "args": {"path": "RELEASE-NOTES.md", "content": CONTENT},
        },
    ],
}

EDGE = """(id) => {
  const edge = (window.forge.editor || window.forge.graph).cy.getElementById(id);
  if (edge.empty()) return null;
  return {source: edge.source().id(), target: edge.target().id(), label: edge.data("label"),
          classes: edge.classes(), lineStyle: edge.style("line-style"),
          selectable: edge.selectable()};
}"""


def _open(page, people, plan=PLAN):
    ada = people.make("ada", "author")
    version = services.create_plan(ada, "Release notes", from_data(plan))
    people.login(page, ada)
    page.goto(f"/plans/{version.plan_id}/edit/")
    wait_ready(page)
    return version


def _edge(page, edge_id):
    return page.evaluate(EDGE, edge_id)


def _document(page):
    return page.evaluate("window.forge.editor.store.document")


def test_data_edges_are_drawn_dashed_and_labelled_apart_from_dependencies(page, people):
    _open(page, people)
    settle(page)

    assert _edge(page, "data:read>publish") == {
        "source": "read",
        "target": "publish",
        "label": "content",
        "classes": ["data-edge"],
        "lineStyle": "dashed",
        "selectable": False,
    }
    assert _edge(page, "data:read>count")["label"] == "path"
    # the dependency edges are there as before, solid
    assert _edge(page, "read>count")["lineStyle"] == "solid"
    assert _edge(page, "count>publish")["lineStyle"] == "solid"
    assert _edge(page, "data:count>publish") is None
    shoot(page, "data-edges")


# The demo's release notes: publish takes read's content, and read sits beside count, so
# the data edge runs diagonally between adjacent layers.
DIAMOND = {
    "goal": "Draft the release notes for version 2.4 from the changelog",
    "deliverable": "publish",
    "steps": [
        {"id": "changelog", "description": "Write the raw changelog entries into the workspace",
         "tool": "file_write", "args": {"path": "CHANGELOG.txt", "content": "fix: a\n"}},
        {"id": "count", "description": "Count the changelog entries with wc",
         "depends_on": ["changelog"], "tool": "shell",
         "args": {"argv": ["wc", "-l", "CHANGELOG.txt"]}},
        {"id": "read", "description": "Read the changelog back for the notes",
         "depends_on": ["changelog"], "tool": "file_read", "args": {"path": "CHANGELOG.txt"}},
        {"id": "publish", "description": "Publish the notes built from what read returned",
         "depends_on": ["count", "read"], "tool": "file_write",
         "args": {"path": "RELEASE-NOTES.md", "content": CONTENT}},
    ],
}  # fmt: skip
DRAWN = """() => window.forge.editor.cy.edges('.data-edge').map((edge) => {
  const ends = [edge.renderedSourceEndpoint(), edge.renderedTargetEndpoint()];
  return [edge.id(), ends.every((end) => Number.isFinite(end.x) && Number.isFinite(end.y))];
})"""


def test_a_diagonal_data_edge_between_adjacent_steps_is_drawn(page, people):
    # Cytoscape does not draw an edge whose control point falls inside a step it joins
    # (its endpoint there is NaN): the stylesheet's bow did that to this edge.
    _open(page, people, DIAMOND)
    settle(page)

    assert page.evaluate(DRAWN) == [["data:read>publish", True]]
    shoot(page, "diagonal")


def test_the_step_panel_lists_what_a_step_takes_and_what_its_output_feeds(page, people):
    _open(page, people)

    click_node(page, "publish")
    takes = page.locator(".step-panel .data-in li")
    expect(takes).to_have_count(1)
    expect(takes.first).to_have_text("content ← read.content (part 1 of its text)")
    # the argument form shows the $join as its parts, the reference as a chip
    content = page.locator(".args-form .arg[data-arg=content]")
    expect(content.locator(".ref-chip")).to_have_text("from step read · content×")
    assert content.locator("textarea.part-text").input_value() == "# 2.4\n\n"

    click_node(page, "read")
    feeds = page.locator(".step-panel .data-out li")
    expect(feeds).to_have_count(2)
    assert feeds.evaluate_all("items => items.map(i => i.textContent)") == [
        "count.argv[2] ← path",
        "publish.content ← content",
    ]
    shoot(page, "step-panel")


def test_a_wrong_reference_is_painted_on_its_step_and_its_data_edge(page, people):
    _open(page, people)
    click_node(page, "publish")
    # the reference's chip reopens the picker, which takes any path: the compiler judges
    content = page.locator(".args-form .arg[data-arg=content]")
    content.locator(".ref-chip .ref-text").click()
    content.locator(".ref-picker input[name=ref-path]").fill("contents")
    content.get_by_role("button", name="Use").click()
    wait_compiled(page)
    settle(page)

    assert ("invalid_reference", "publish read") in problems(page)
    assert {"d-invalid_reference", "error"} <= set(classes(page, "publish"))
    painted = set(_edge(page, "data:read>publish")["classes"])
    assert {"data-edge", "error", "d-invalid_reference"} <= painted
    expect(page.locator("#problems li.problem[data-code=invalid_reference]")).to_contain_text(
        "the output has no 'contents' (it has: content, path)"
    )
    shoot(page, "wrong-reference")


def test_renaming_a_step_renames_the_references_to_it(page, people):
    _open(page, people)
    click_node(page, "read")

    page.fill("[data-field=id]", "changelog")
    page.locator("[data-field=id]").press("Enter")
    wait_compiled(page)
    settle(page)

    steps = {step["id"]: step for step in _document(page)["steps"]}
    assert steps["publish"]["args"]["content"]["$join"][1] == {
        "$from": "changelog",
        "path": "content",
    }
    assert steps["count"]["args"]["argv"][2] == {"$from": "changelog", "path": "path"}
    assert _edge(page, "data:changelog>publish")["label"] == "content"
    assert _edge(page, "data:read>publish") is None
    assert problems(page) == [p for p in problems(page) if p[0] != "invalid_reference"]


def test_the_version_page_draws_the_data_edges(page, people):
    version = _open(page, people)

    page.goto(f"/plans/{version.plan_id}/versions/{version.number}/")
    page.evaluate("() => window.forge.graph.ready.then(() => true)")

    assert _edge(page, "data:read>publish")["lineStyle"] == "dashed"
    expect(page.locator(".legend")).to_contain_text("Data ($from)")
    shoot(page, "version")


def test_the_pure_model_finds_references_edges_and_renames_them(page):
    page.goto("/accounts/login/")  # any page of ours: same origin, same CSP
    result = page.evaluate(
        """async () => {
      const m = await import("/static/forge/js/model/references.js");
      const e = await import("/static/forge/js/model/elements.js");
      const steps = [
        {id: "a", tool: "echo", args: {x: 1}},
        {id: "b", tool: "echo", args: {
          v: {$from: "a", path: "x"},
          t: {$join: ["n=", {$from: "a"}, {$from: "ghost"}]},
          keep: {$literal: {$from: "a"}},
          self: {$from: "b"},
          list: [{$from: "a", path: ["k.dot", 0]}]}},
      ];
      const doc = {goal: "g", steps};
      const elements = e.toElements(doc);
      return {
        refs: m.stepReferences(steps[1]),
        edges: m.dataEdges(steps).map((d) => [d.source, d.target, m.dataEdgeLabel(d.refs)]),
        ids: elements.edges.map((edge) => edge.data.id),
        key: e.structureKey(elements),
        renamed: m.renameInArgs(steps[1].args, "a", "z"),
        untouched: m.renameInArgs(steps[0].args, "a", "z") === steps[0].args,
        operator: [m.isOperator({$join: []}), m.isOperator({from: "a"}), m.isOperator("x")],
      };
    }"""
    )

    assert result["refs"] == [
        {"step": "a", "path": "x", "at": "v", "part": None},
        {"step": "a", "path": "", "at": "t", "part": 1},
        {"step": "ghost", "path": "", "at": "t", "part": 2},
        {"step": "b", "path": "", "at": "self", "part": None},
        {"step": "a", "path": '["k.dot", "0"]', "at": "list[0]", "part": None},
    ]
    # one edge per pair, none to an unknown step or to the step itself
    assert result["edges"] == [["a", "b", 'x, (all), ["k.dot", "0"]']]
    assert result["ids"] == ["data:a>b"]
    assert result["key"] == "a\u0001b\u0002"  # data edges do not call for a new layout
    assert result["renamed"] == {
        "v": {"$from": "z", "path": "x"},
        "t": {"$join": ["n=", {"$from": "z"}, {"$from": "ghost"}]},
        "keep": {"$literal": {"$from": "a"}},
        "self": {"$from": "b"},
        "list": [{"$from": "z", "path": ["k.dot", 0]}],
    }
    assert result["untouched"] is True
    assert result["operator"] == [True, False, False]
