// Unit tests of the editor's pure modules (static/forge/js/model/): document edits, undo
// history, elements and ghosts, diagnostics paint, text both ways, argument forms, the
// layered layout, the diff graph and an import's notes kept beside each compile. Run by
// node:test from tests/e2e/test_model.py. No DOM, no browser: the modules say "Pure".
import assert from "node:assert/strict";
import { test } from "node:test";

import { bowPoints, dataBow } from "../../static/forge/js/model/bows.js";
import { diffElements } from "../../static/forge/js/model/diff.js";
import { addStep, connect, emptyDocument, newStepId, removeSteps, renameStep, sameDocument, setDeliverable, updateStep } from "../../static/forge/js/model/document.js";
import { toElements } from "../../static/forge/js/model/elements.js";
import { canRedo, createHistory, record, redo, undo } from "../../static/forge/js/model/history.js";
import { isotonic, layeredLayout } from "../../static/forge/js/model/layered.js";
import { IMPORT_CODES, paint, withImportNotes } from "../../static/forge/js/model/paint.js";
import { fieldsFor, formatValue, parseValue } from "../../static/forge/js/model/schema-form.js";
import { fromText, toText } from "../../static/forge/js/model/text.js";

// A diagnostic as the compile endpoint answers one.
const diagnostic = (code, severity, nodes, edges = []) => ({ code, severity, message: "", nodes, edges });

// paint() over every node and edge of a document's elements.
function paintAll(diagnostics, elements) {
  return paint(
    diagnostics,
    new Set(elements.nodes.map((n) => n.data.id)),
    new Set(elements.edges.map((e) => e.data.id)),
  );
}

test("document edits keep references consistent", () => {
  let doc = emptyDocument("g");
  doc = addStep(doc, { id: "a" });
  doc = addStep(doc, { id: "b", dependsOn: ["a"] });
  doc = setDeliverable(doc, "b");
  const before = doc;
  doc = renameStep(doc, "b", "c");
  assert.deepEqual(
    { deps: doc.steps[1].depends_on, id: doc.steps[1].id, deliverable: doc.deliverable },
    { deps: ["a"], id: "c", deliverable: "c" },
  );
  assert.deepEqual(connect(doc, "c", "a").steps[0].depends_on, ["c"]);
  const removed = removeSteps(doc, ["a"]);
  assert.deepEqual(removed.steps, [{ id: "c", depends_on: [] }]);
  assert.equal(removed.deliverable, "c");
  assert.throws(() => renameStep(doc, "a", "bad id"), { message: /1 to 64/ });
  assert.equal(before.steps[1].id, "b"); // edits never change their input
  const updated = updateStep(doc, "a", { description: "", tool: "noop", args: {} });
  assert.deepEqual(updated.steps[0], { id: "a", depends_on: [], tool: "noop" });
  assert.equal(newStepId(doc), "step_1");
});

test("history undoes, redoes and merges typing in one field", () => {
  let h = createHistory(1);
  h = record(h, 2, { key: "desc", now: 0 });
  h = record(h, 3, { key: "desc", now: 500 });
  h = record(h, 4, { key: "other", now: 600 });
  assert.deepEqual(h.past, [1, 3]);
  h = undo(h);
  assert.equal(h.present, 3);
  h = undo(h);
  assert.equal(h.present, 1);
  h = redo(h);
  assert.equal(h.present, 3);
  h = record(h, 9, { now: 700 });
  assert.equal(canRedo(h), false);
});

test("elements, ghosts and paint follow the diagnostics", () => {
  const doc = {
    goal: "g",
    deliverable: "gone",
    steps: [
      { id: "a", depends_on: ["b"], tool: "nope" },
      { id: "b", depends_on: ["a", "missing"] },
      { id: "b", depends_on: [] },
    ],
  };
  const els = toElements(doc);
  assert.deepEqual(
    els.nodes.map((n) => [n.data.id, n.classes]),
    [
      ["a", "step tool-step"],
      ["b", "step agent-step"],
      ["b#2", "step agent-step duplicate"],
      ["ghost:missing", "ghost"],
      ["ghost:gone", "ghost ghost-deliverable"],
    ],
  );
  assert.deepEqual(
    els.edges.map((e) => [e.data.id, e.data.source, e.classes]),
    [
      ["b>a", "b", "dependency"],
      ["a>b", "a", "dependency"],
      ["missing>b", "ghost:missing", "dependency dangling"],
    ],
  );
  const painted = paintAll(
    [
      diagnostic("cycle", "error", ["a", "b"], [["b", "a"], ["a", "b"]]),
      diagnostic("unknown_tool", "error", ["a"], []),
      diagnostic("missing_dependency", "error", ["b", "missing"], [["missing", "b"]]),
      diagnostic("vague_step", "warning", ["a"], []),
    ],
    els,
  );
  assert.deepEqual(
    [...painted.nodes.get("a").classes].sort(),
    ["cycle", "d-cycle", "d-unknown_tool", "d-vague_step", "error"],
  );
  assert.deepEqual(painted.nodes.get("a").badges, [{ text: "unknown tool", severity: "error" }]);
  assert.deepEqual(
    [...painted.nodes.get("ghost:missing").classes].sort(),
    ["d-missing_dependency", "error", "missing"],
  );
  assert.deepEqual(
    [...painted.edges.get("missing>b")].sort(),
    ["d-missing_dependency", "error", "missing"],
  );
  assert.deepEqual(painted.located[0], ["a", "b", "b>a", "a>b"]);
});

test("text round-trips and errors name their line", () => {
  const doc = {
    schema: "forge.plan/v1",
    goal: "g: <b>",
    steps: [{ id: "a", depends_on: [], done_when: { checks: ["length(facts) > `0`"] } }],
  };
  assert.equal(sameDocument(doc, fromText(toText(doc, "yaml"), "yaml")), true);
  assert.equal(sameDocument(doc, fromText(toText(doc, "json"), "json")), true);
  assert.throws(
    () => fromText("goal: g\nsteps:\n  - id: a\n   bad: [", "yaml"),
    (e) => {
      assert.ok([3, 4, 5].includes(e.line), `line ${e.line}`);
      return true;
    },
  );
  assert.throws(() => fromText("- 1\n- 2\n", "yaml"), {
    message: "A plan is a mapping with goal and steps.",
  });
});

test("argument fields come from the JSON schema", () => {
  const schema = {
    type: "object",
    required: ["method", "url"],
    properties: {
      method: { enum: ["GET", "POST"] },
      url: { type: "string" },
      headers: { type: "object", additionalProperties: { type: "string" } },
      body: {},
      retries: { type: "integer", minimum: 0 },
    },
  };
  assert.deepEqual(
    fieldsFor(schema).map((f) => [f.name, f.kind, f.required]),
    [
      ["method", "enum", true],
      ["url", "string", true],
      ["headers", "string-map", false],
      ["body", "json", false],
      ["retries", "integer", false],
    ],
  );
  assert.deepEqual(parseValue("string-map", "Accept=text/plain\nX-Id=a=b"), {
    Accept: "text/plain",
    "X-Id": "a=b",
  });
  assert.deepEqual(parseValue("string-list", "a\n\n b \n"), ["a", "b"]);
  assert.equal(formatValue("string-map", { A: "1" }), "A=1");
  assert.equal(parseValue("integer", ""), undefined);
});

test("the layered layout puts dependencies above and never overlaps", () => {
  let seed = 7;
  const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
  const nodes = [];
  const edges = [];
  for (let i = 0; i < 800; i++) {
    nodes.push({ id: "s" + i, width: 200, height: 60 });
    if (i) edges.push({ source: "s" + Math.floor(random() * i), target: "s" + i });
    if (i > 1) edges.push({ source: "s" + Math.floor(random() * i), target: "s" + i });
  }
  edges.push({ source: "s700", target: "s3" }); // a cycle: must not break the layout
  const p = layeredLayout(nodes, edges, { nodeSep: 30 });
  assert.equal(p.size, 800);
  const acyclic = edges.slice(0, -1);
  const above = acyclic.filter((e) => p.get(e.source).y < p.get(e.target).y);
  assert.equal(above.length, acyclic.length);
  const rows = new Map();
  for (const q of p.values()) (rows.get(q.y) || rows.set(q.y, []).get(q.y)).push(q.x);
  let overlaps = 0;
  for (const xs of rows.values()) {
    xs.sort((a, b) => a - b);
    for (let i = 1; i < xs.length; i++) if (xs[i] - xs[i - 1] < 229.9) overlaps++;
  }
  assert.equal(overlaps, 0);
  assert.deepEqual(isotonic([3, 1, 2, 5, 4]), [2, 2, 2, 4.5, 4.5]);
});

test("the diff graph marks added, removed and changed", () => {
  const old = {
    goal: "g",
    steps: [
      { id: "a", depends_on: [] },
      { id: "b", depends_on: ["a"] },
      { id: "gone", depends_on: ["a"] },
    ],
  };
  const now = {
    goal: "g",
    steps: [
      { id: "a", depends_on: [] },
      { id: "b", depends_on: ["a"], description: "new" },
      { id: "c", depends_on: ["b"] },
    ],
  };
  const diff = {
    added_steps: ["c"],
    removed_steps: ["gone"],
    changed_steps: [{ id: "b", changes: [{ field: "description", before: "", after: "new" }] }],
    added_edges: [["b", "c"]],
    removed_edges: [["a", "gone"]],
    plan_changes: [],
  };
  const els = diffElements(old, now, diff);
  assert.deepEqual(Object.fromEntries([...els.nodes, ...els.edges].map((e) => [e.data.id, e.classes])), {
    a: "step agent-step",
    b: "step agent-step changed",
    c: "step agent-step deliverable added",
    gone: "step removed",
    "a>b": "dependency",
    "b>c": "dependency added",
    "a>gone": "dependency removed",
  });
});

// Issue 25, item 8: a flattened Mermaid decision is found when the source is read; the
// live compile of the document cannot find it again, so the editor keeps it.
test("import notes stay beside each compile for the steps still there", () => {
  const note = diagnostic("flattened_decision", "warning", ["check", "yes", "no"], [["check", "yes"], ["check", "no"]]);
  const answer = [
    diagnostic("agent_without_tools", "error", ["yes"]),
    diagnostic("vague_step", "warning", ["no"]),
    diagnostic("approval_required", "info", ["yes"]),
  ];
  assert.deepEqual(
    withImportNotes(answer, [note], ["check", "yes", "no"]).map((x) => x.code),
    ["agent_without_tools", "vague_step", "flattened_decision", "approval_required"],
  );
  assert.deepEqual(
    withImportNotes(answer, [note], ["yes", "no"]).map((x) => x.code),
    ["agent_without_tools", "vague_step", "approval_required"],
  );
  assert.deepEqual([...IMPORT_CODES], ["flattened_decision"]);
  const els = toElements({
    goal: "g",
    steps: [{ id: "check" }, { id: "yes", depends_on: ["check"] }, { id: "no", depends_on: ["check"] }],
  });
  const painted = paintAll([note], els);
  assert.deepEqual([...painted.nodes.get("check").classes].sort(), ["d-flattened_decision", "warning"]);
  assert.deepEqual(painted.nodes.get("check").badges, [{ text: "decision flattened", severity: "warning" }]);
  assert.deepEqual([...painted.nodes.get("yes").classes].sort(), ["d-flattened_decision"]); // named, not at fault
  assert.deepEqual(painted.nodes.get("yes").badges, []);
  assert.deepEqual([...painted.edges.get("check>yes")].sort(), ["d-flattened_decision", "warning"]);
});

// The demo's release notes as laid out: read beside count, publish below them both.
const READ = { x: 110, y: 187, w: 223.5, h: 85.5 };
const PUBLISH = { x: 238, y: 340.75, w: 225, h: 102.5 };
const inside = (p, box) => Math.abs(p.x - box.x) < box.w / 2 && Math.abs(p.y - box.y) < box.h / 2;

test("a data edge keeps the stylesheet's bow when its points are clear of both steps", () => {
  assert.equal(dataBow({ x: 0, y: 0, w: 220, h: 80 }, { x: 0, y: 150, w: 220, h: 80 }), null);
});

test("a diagonal data edge is bowed so no control point falls inside a step", () => {
  // The stylesheet's bow puts its first point inside read: Cytoscape then draws nothing.
  const fallback = bowPoints(READ, PUBLISH, { distances: [-50, -50], weights: [0.25, 0.75] });
  assert.ok(inside(fallback[0], READ));
  const bow = dataBow(READ, PUBLISH);
  assert.notEqual(bow, null);
  for (const point of bowPoints(READ, PUBLISH, bow)) {
    assert.ok(!inside(point, READ) && !inside(point, PUBLISH), JSON.stringify(point));
  }
});

test("a data edge that skips layers bows wide enough to pass the steps between", () => {
  const bow = dataBow({ x: 0, y: 0, w: 220, h: 80 }, { x: 0, y: 300, w: 220, h: 80 }, { skipsLayers: true });
  assert.deepEqual(bow, { distances: [-200, -200], weights: [0.25, 0.75] });
});
