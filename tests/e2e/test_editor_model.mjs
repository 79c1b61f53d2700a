// Unit tests of the editor's pure modules that issue 25 added or changed: which steps an
// argument may take a value from and the paths their outputs offer (model/referable.js),
// a reference typed as text (model/references.js), finding a step (model/search.js),
// comments kept when the graph rewrites the YAML text (model/yaml-comments.js), and the
// undo history of {document, layout} (model/history.js). Run by node:test from
// tests/e2e/test_editor_model.py. No DOM, no browser.
import assert from "node:assert/strict";
import { test } from "node:test";

import { connect, removeSteps, renameStep, updateStep } from "../../static/forge/js/model/document.js";
import { createHistory, record, redo, undo } from "../../static/forge/js/model/history.js";
import { offeredPaths, outputPaths, pathsInValue, referableSteps } from "../../static/forge/js/model/referable.js";
import { fromReference, readTypedOperator, referenceOf } from "../../static/forge/js/model/references.js";
import { findSteps } from "../../static/forge/js/model/search.js";
import { fromText, toText } from "../../static/forge/js/model/text.js";
import { commentsOf, lostComments, withComments } from "../../static/forge/js/model/yaml-comments.js";

const FILE_READ_OUTPUT = {
  type: "object",
  properties: { path: { type: "string" }, content: { type: "string" } },
  additionalProperties: false,
};

// fetch -> read -> score -> report, and side (no dependency), late (after report).
const PLAN = {
  goal: "Score the changelog",
  steps: [
    { id: "fetch", depends_on: [], tool: "http_request", args: { url: "https://example.com" } },
    { id: "read", depends_on: ["fetch"], tool: "file_read", args: { path: "CHANGELOG.md" } },
    { id: "side", depends_on: [], description: "An unrelated step", tool: "noop" },
    { id: "score", depends_on: ["read"], description: "Score the risk of the release", tool: "echo", args: { risk: "low", notes: { lines: [1, 2] } } },
    { id: "report", depends_on: ["score"], description: "Write the risk report", tool: "file_write", args: {} },
    { id: "late", depends_on: ["report"], description: "After the report" },
  ],
};

test("an argument may take values only from the step's ancestors, in document order", () => {
  assert.deepEqual(referableSteps(PLAN, "report").map((s) => s.id), ["fetch", "read", "score"]);
  assert.deepEqual(referableSteps(PLAN, "fetch").map((s) => s.id), []);
  // not itself, not a descendant, not an unrelated step
  const ids = referableSteps(PLAN, "score").map((s) => s.id);
  assert.ok(!ids.includes("score") && !ids.includes("report") && !ids.includes("late") && !ids.includes("side"));
  // a cycle: the step is its own ancestor, and still not offered
  const cyclic = connect(PLAN, "report", "fetch");
  assert.ok(!referableSteps(cyclic, "fetch").some((s) => s.id === "fetch"));
  // an unknown step, a missing dependency: nothing, no error
  assert.deepEqual(referableSteps(PLAN, "nope"), []);
  const ghost = updateStep(PLAN, "read", { depends_on: ["fetch", "gone"] });
  assert.deepEqual(referableSteps(ghost, "read").map((s) => s.id), ["fetch"]);
});

test("the paths an output schema offers: keys, list items, nested objects, with their types", () => {
  assert.deepEqual(outputPaths(FILE_READ_OUTPUT), [
    { path: "path", type: "string" },
    { path: "content", type: "string" },
  ]);
  const nested = {
    type: "object",
    properties: {
      status: { type: "integer" },
      headers: { type: "object", additionalProperties: { type: "string" } },
      matches: { type: "array", items: { type: "object", properties: { text: { type: "string" } } } },
      "x.id": { type: "string" },
    },
  };
  assert.deepEqual(outputPaths(nested), [
    { path: "status", type: "integer" },
    { path: "headers", type: "object" },
    { path: "matches", type: "array" },
    { path: "matches.0", type: "object" },
    { path: "matches.0.text", type: "string" },
    { path: '["x.id"]', type: "string" },
  ]);
  assert.deepEqual(outputPaths(null), []);
  assert.deepEqual(outputPaths({}), []);
  // deep or wide schemas are cut, never walked forever
  const deep = { type: "object", properties: {} };
  let at = deep;
  for (let i = 0; i < 20; i += 1) {
    at.properties[`k${i}`] = { type: "object", properties: {} };
    at = at.properties[`k${i}`];
  }
  assert.ok(outputPaths(deep).length <= 4);
  const wide = { type: "object", properties: Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`k${i}`, { type: "string" }])) };
  assert.equal(outputPaths(wide).length, 100);
});

test("an echo step offers the paths of its own arguments; an agent or unknown tool offers a free path", () => {
  assert.deepEqual(pathsInValue({ risk: "low", notes: { lines: [1, 2] }, ref: { $from: "read" } }), [
    { path: "risk", type: "string" },
    { path: "notes", type: "object" },
    { path: "notes.lines", type: "array" },
    { path: "notes.lines.0", type: "integer" },
    { path: "notes.lines.1", type: "integer" },
    { path: "ref", type: null },
  ]);
  const tools = new Map([
    ["file_read", { name: "file_read", output_schema: FILE_READ_OUTPUT, echoes_args: false }],
    ["echo", { name: "echo", output_schema: null, echoes_args: true }],
    ["mcp.tool", { name: "mcp.tool", output_schema: null, echoes_args: false }],
  ]);
  const find = (id) => PLAN.steps.find((s) => s.id === id);
  assert.deepEqual(offeredPaths(find("read"), tools.get("file_read")), {
    known: true,
    paths: [{ path: "path", type: "string" }, { path: "content", type: "string" }],
  });
  assert.equal(offeredPaths(find("score"), tools.get("echo")).paths[0].path, "risk");
  assert.deepEqual(offeredPaths(find("late"), null), { known: false, paths: [] });
  assert.deepEqual(offeredPaths(find("fetch"), tools.get("mcp.tool")), { known: false, paths: [] });
});

test("a reference is built from a step and a typed path, and read back for a chip", () => {
  assert.deepEqual(fromReference("score", "risk"), { $from: "score", path: "risk" });
  assert.deepEqual(fromReference("score", " notes.lines.0 "), { $from: "score", path: "notes.lines.0" });
  assert.deepEqual(fromReference("score", ""), { $from: "score" });
  assert.deepEqual(fromReference("fetch", '["headers", "x.request.id"]'), { $from: "fetch", path: ["headers", "x.request.id"] });
  assert.deepEqual(referenceOf({ $from: "score", path: "risk" }), { step: "score", path: "risk" });
  assert.deepEqual(referenceOf({ $from: "score" }), { step: "score", path: "" });
  assert.deepEqual(referenceOf({ $from: "fetch", path: ["headers", "x.id"] }), { step: "fetch", path: '["headers", "x.id"]' });
  assert.equal(referenceOf({ $from: "score", path: "risk", extra: 1 }), null); // the compiler's to judge: shown as JSON
  assert.equal(referenceOf("score"), null);
  assert.equal(referenceOf({ $join: [] }), null);
});

test("text typed into a field that is a reference ($from, $join, $literal) is read as one", () => {
  assert.deepEqual(readTypedOperator('{"$from": "score", "path": "risk"}'), { $from: "score", path: "risk" });
  assert.deepEqual(readTypedOperator('  {"$join": ["# ", {"$from": "read", "path": "content"}]}\n'), {
    $join: ["# ", { $from: "read", path: "content" }],
  });
  assert.deepEqual(readTypedOperator('{"$literal": {"$from": "x"}}'), { $literal: { $from: "x" } });
  assert.equal(readTypedOperator("score.risk"), null);
  assert.equal(readTypedOperator('{"path": "risk"}'), null); // JSON, but not a reference: text
  assert.equal(readTypedOperator('{"$from": "score", '), null); // not JSON yet: text
  assert.equal(readTypedOperator("{$from: score}"), null);
});

test("finding a step: by id or description, any case, exact id first, then in plan order", () => {
  assert.deepEqual(findSteps(PLAN, "risk"), ["score", "report"]);
  assert.deepEqual(findSteps(PLAN, "REPORT"), ["report", "late"]);
  assert.deepEqual(findSteps(PLAN, "  read "), ["read"]);
  assert.deepEqual(findSteps(PLAN, ""), []);
  assert.deepEqual(findSteps(PLAN, "nothing like it"), []);
  const big = { goal: "g", steps: Array.from({ length: 300 }, (_, i) => ({ id: `s${i}`, depends_on: [], description: `part ${i % 7}` })) };
  assert.deepEqual(findSteps(big, "s25").slice(0, 2), ["s25", "s250"]);
  assert.equal(findSteps(big, "part 3").length, 43);
});

test("undo after a move undoes the move alone: the history keeps {document, layout}", () => {
  let doc = PLAN;
  let h = createHistory({ document: doc, layout: null });
  doc = connect(doc, "side", "report");
  h = record(h, { document: doc, layout: null }, { now: 1 });
  h = record(h, { document: doc, layout: { side: [10, 20] } }, { now: 2 });
  h = undo(h);
  assert.equal(h.present.layout, null);
  assert.deepEqual(h.present.document.steps[4].depends_on, ["score", "side"]);
  h = undo(h);
  assert.deepEqual(h.present.document.steps[4].depends_on, ["score"]);
  h = redo(redo(h));
  assert.deepEqual(h.present.layout, { side: [10, 20] });
});

const COMMENTED = `# The plan's own notes
goal: Score the changelog
steps:
  - id: fetch
    depends_on: []
    tool: http_request  # the release server is slow
    args:
      url: https://example.com
  # read: the file the fetch wrote
  - id: read
    depends_on: [fetch]
    tool: file_read
    args:
      path: CHANGELOG.md
`;

test("the graph's edits rewrite the YAML text and keep its comments", () => {
  const doc = fromText(COMMENTED, "yaml");
  assert.deepEqual(commentsOf(COMMENTED), ["The plan's own notes", "the release server is slow", "read: the file the fetch wrote"]);

  const described = updateStep(doc, "read", { description: "Read the changelog" });
  const text = withComments(COMMENTED, described);
  assert.deepEqual(fromText(text, "yaml"), described);
  assert.deepEqual(lostComments(COMMENTED, text), []);
  assert.match(text, /# read: the file the fetch wrote\n\s+- id: read\n/);
  assert.match(text, /depends_on: \[ fetch \]|depends_on: \[fetch\]/); // the flow style stays

  // a rename, a new step, a removed dependency: the comments stay
  let edited = renameStep(doc, "fetch", "download");
  edited = { ...edited, steps: [...edited.steps, { id: "extra", depends_on: ["read"] }] };
  const renamed = withComments(COMMENTED, edited);
  assert.deepEqual(fromText(renamed, "yaml"), edited);
  assert.deepEqual(lostComments(COMMENTED, renamed), []);

  // removing the step a comment is about removes the comment: said, so it can be refused
  const removed = withComments(COMMENTED, removeSteps(doc, ["read"]));
  assert.deepEqual(fromText(removed, "yaml"), removeSteps(doc, ["read"]));
  assert.deepEqual(lostComments(COMMENTED, removed), ["read: the file the fetch wrote"]);
});

test("text without comments is written as before; text that does not parse keeps nothing", () => {
  const plain = toText(PLAN, "yaml");
  assert.deepEqual(commentsOf(plain), []);
  assert.equal(withComments(plain, PLAN), null); // nothing to keep: the ordinary writer
  assert.equal(withComments("steps: [", PLAN), null);
  // a '#' inside a string is no comment
  assert.deepEqual(commentsOf('goal: "# not a comment"\nsteps: []\n'), []);
});
