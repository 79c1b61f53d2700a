"""The editor's pure modules (static/forge/js/model/), run in the browser as the pages run
them: document edits, undo history, elements and ghosts, diagnostics paint, text both
ways, argument forms, the layered layout and the diff graph."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db(transaction=True)

MODEL = "/static/forge/js/model/"


def run(page, body: str):
    """Evaluate ``body`` (an async function body) with the model modules as ``m``."""
    script = f"""async () => {{
      const names = ["document", "history", "elements", "paint", "text", "schema-form",
                     "layered", "diff"];
      const m = {{}};
      for (const name of names) Object.assign(m, await import("{MODEL}" + name + ".js"));
      {body}
    }}"""
    return page.evaluate(script)


@pytest.fixture
def blank(page):
    page.goto("/accounts/login/")  # any page of ours: same origin, same CSP
    return page


def test_document_edits_keep_references_consistent(blank):
    result = run(
        blank,
        """
      let doc = m.emptyDocument("g");
      doc = m.addStep(doc, {id: "a"});
      doc = m.addStep(doc, {id: "b", dependsOn: ["a"]});
      doc = m.setDeliverable(doc, "b");
      const before = doc;
      doc = m.renameStep(doc, "b", "c");
      const renamed = {deps: doc.steps[1].depends_on, id: doc.steps[1].id,
                       deliverable: doc.deliverable};
      const cycle = m.connect(doc, "c", "a").steps[0].depends_on;
      const removed = m.removeSteps(doc, ["a"]);
      let invalid = null;
      try { m.renameStep(doc, "a", "bad id"); } catch (e) { invalid = e.message; }
      const updated = m.updateStep(doc, "a", {description: "", tool: "noop", args: {}});
      return {renamed, cycle, removedSteps: removed.steps, removedDeliverable: removed.deliverable,
              invalid, beforeUnchanged: before.steps[1].id, updated: updated.steps[0],
              newId: m.newStepId(doc)};
    """,
    )
    assert result["renamed"] == {"deps": ["a"], "id": "c", "deliverable": "c"}
    assert result["cycle"] == ["c"]
    assert result["removedSteps"] == [{"id": "c", "depends_on": []}]
    assert result["removedDeliverable"] == "c"
    assert "1 to 64" in result["invalid"]
    assert result["beforeUnchanged"] == "b"  # edits never change their input
    assert result["updated"] == {"id": "a", "depends_on": [], "tool": "noop"}
    assert result["newId"] == "step_1"


def test_history_undoes_redoes_and_merges_typing_in_one_field(blank):
    result = run(
        blank,
        """
      let h = m.createHistory(1);
      h = m.record(h, 2, {key: "desc", now: 0});
      h = m.record(h, 3, {key: "desc", now: 500});
      h = m.record(h, 4, {key: "other", now: 600});
      const merged = h.past;
      h = m.undo(h); const afterUndo = h.present;
      h = m.undo(h); const afterTwo = h.present;
      h = m.redo(h); const afterRedo = h.present;
      h = m.record(h, 9, {now: 700});
      return {merged, afterUndo, afterTwo, afterRedo, canRedo: m.canRedo(h)};
    """,
    )
    assert result == {
        "merged": [1, 3],
        "afterUndo": 3,
        "afterTwo": 1,
        "afterRedo": 3,
        "canRedo": False,
    }


def test_elements_ghosts_and_paint_follow_the_diagnostics(blank):
    result = run(
        blank,
        """
      const doc = {goal: "g", deliverable: "gone", steps: [
        {id: "a", depends_on: ["b"], tool: "nope"},
        {id: "b", depends_on: ["a", "missing"]},
        {id: "b", depends_on: []},
      ]};
      const els = m.toElements(doc);
      const nodes = els.nodes.map((n) => [n.data.id, n.classes]);
      const edges = els.edges.map((e) => [e.data.id, e.data.source, e.classes]);
      const d = (code, severity, nodes, edges) => ({code, severity, message: "", nodes, edges});
      const diagnostics = [
        d("cycle", "error", ["a", "b"], [["b", "a"], ["a", "b"]]),
        d("unknown_tool", "error", ["a"], []),
        d("missing_dependency", "error", ["b", "missing"], [["missing", "b"]]),
        d("vague_step", "warning", ["a"], []),
      ];
      const painted = m.paint(diagnostics, new Set(els.nodes.map((n) => n.data.id)),
                              new Set(els.edges.map((e) => e.data.id)));
      return {
        nodes, edges,
        a: [...painted.nodes.get("a").classes].sort(), badges: painted.nodes.get("a").badges,
        ghost: [...painted.nodes.get("ghost:missing").classes].sort(),
        dangling: [...painted.edges.get("missing>b")].sort(),
        located: painted.located,
      };
    """,
    )
    assert result["nodes"] == [
        ["a", "step tool-step"],
        ["b", "step agent-step"],
        ["b#2", "step agent-step duplicate"],
        ["ghost:missing", "ghost"],
        ["ghost:gone", "ghost ghost-deliverable"],
    ]
    assert result["edges"] == [
        ["b>a", "b", "dependency"],
        ["a>b", "a", "dependency"],
        ["missing>b", "ghost:missing", "dependency dangling"],
    ]
    assert result["a"] == ["cycle", "d-cycle", "d-unknown_tool", "d-vague_step", "error"]
    assert result["badges"] == [{"text": "unknown tool", "severity": "error"}]
    assert result["ghost"] == ["d-missing_dependency", "error", "missing"]
    assert result["dangling"] == ["d-missing_dependency", "error", "missing"]
    assert result["located"][0] == ["a", "b", "b>a", "a>b"]


def test_text_round_trips_and_errors_name_their_line(blank):
    result = run(
        blank,
        """
      const doc = {schema: "forge.plan/v1", goal: "g: <b>", steps: [{id: "a", depends_on: [],
                   done_when: {checks: ["length(facts) > `0`"]}}]};
      const yaml = m.toText(doc, "yaml");
      const back = m.fromText(yaml, "yaml");
      const json = m.fromText(m.toText(doc, "json"), "json");
      let error = null;
      try { m.fromText("goal: g\\nsteps:\\n  - id: a\\n   bad: [", "yaml"); }
      catch (e) { error = {line: e.line, message: e.message}; }
      let notPlan = null;
      try { m.fromText("- 1\\n- 2\\n", "yaml"); } catch (e) { notPlan = e.message; }
      return {same: m.sameDocument(doc, back) && m.sameDocument(doc, json), error, notPlan};
    """,
    )
    assert result["same"] is True
    assert result["error"]["line"] in (3, 4, 5)
    assert result["notPlan"] == "A plan is a mapping with goal and steps."


def test_argument_fields_come_from_the_json_schema(blank):
    result = run(
        blank,
        """
      const schema = {type: "object", required: ["method", "url"], properties: {
        method: {enum: ["GET", "POST"]}, url: {type: "string"}, headers: {type: "object",
        additionalProperties: {type: "string"}}, body: {}, retries: {type: "integer", minimum: 0}}};
      return {
        fields: m.fieldsFor(schema).map((f) => [f.name, f.kind, f.required]),
        map: m.parseValue("string-map", "Accept=text/plain\\nX-Id=a=b"),
        list: m.parseValue("string-list", "a\\n\\n b \\n"),
        shown: m.formatValue("string-map", {A: "1"}),
        empty: m.parseValue("integer", "") === undefined,
      };
    """,
    )
    assert result["fields"] == [
        ["method", "enum", True],
        ["url", "string", True],
        ["headers", "string-map", False],
        ["body", "json", False],
        ["retries", "integer", False],
    ]
    assert result["map"] == {"Accept": "text/plain", "X-Id": "a=b"}
    assert result["list"] == ["a", "b"]
    assert result["shown"] == "A=1"
    assert result["empty"] is True


def test_the_layered_layout_puts_dependencies_above_and_never_overlaps(blank):
    result = run(
        blank,
        """
      let seed = 7; const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
      const nodes = [], edges = [];
      for (let i = 0; i < 800; i++) {
        nodes.push({id: "s" + i, width: 200, height: 60});
        if (i) edges.push({source: "s" + Math.floor(random() * i), target: "s" + i});
        if (i > 1) edges.push({source: "s" + Math.floor(random() * i), target: "s" + i});
      }
      edges.push({source: "s700", target: "s3"});  // a cycle: must not break the layout
      const p = m.layeredLayout(nodes, edges, {nodeSep: 30});
      let above = 0, overlaps = 0;
      for (const e of edges.slice(0, -1)) if (p.get(e.source).y < p.get(e.target).y) above++;
      const rows = new Map();
      for (const q of p.values()) (rows.get(q.y) || rows.set(q.y, []).get(q.y)).push(q.x);
      for (const xs of rows.values()) { xs.sort((a, b) => a - b);
        for (let i = 1; i < xs.length; i++) if (xs[i] - xs[i - 1] < 229.9) overlaps++; }
      return {placed: p.size, above, edges: edges.length - 1, overlaps,
              pav: m.isotonic([3, 1, 2, 5, 4])};
    """,
    )
    assert result["placed"] == 800
    assert result["above"] == result["edges"]
    assert result["overlaps"] == 0
    assert result["pav"] == [2, 2, 2, 4.5, 4.5]


def test_the_diff_graph_marks_added_removed_and_changed(blank):
    result = run(
        blank,
        """
      const old = {goal: "g", steps: [{id: "a", depends_on: []}, {id: "b", depends_on: ["a"]},
                                      {id: "gone", depends_on: ["a"]}]};
      const now = {goal: "g", steps: [{id: "a", depends_on: []}, {id: "b", depends_on: ["a"],
                   description: "new"}, {id: "c", depends_on: ["b"]}]};
      const diff = {added_steps: ["c"], removed_steps: ["gone"],
        changed_steps: [{id: "b", changes: [{field: "description", before: "", after: "new"}]}],
        added_edges: [["b", "c"]], removed_edges: [["a", "gone"]], plan_changes: []};
      const els = m.diffElements(old, now, diff);
      return Object.fromEntries([...els.nodes, ...els.edges].map((e) => [e.data.id, e.classes]));
    """,
    )
    assert result == {
        "a": "step agent-step",
        "b": "step agent-step changed",
        "c": "step agent-step deliverable added",
        "gone": "step removed",
        "a>b": "dependency",
        "b>c": "dependency added",
        "a>gone": "dependency removed",
    }
