// Unit tests of the step-details model (static/forge/js/model/step-details.js), which the
// version page, the approval queue and the replan page share: a step turned into the
// rows an approver reads. Run by node:test from tests/e2e/test_step_details.py.
import assert from "node:assert/strict";
import { test } from "node:test";

import { pausesFromDiagnostics, stepDetails } from "../../static/forge/js/model/step-details.js";
import { stepNodeData } from "../../static/forge/js/model/elements.js";

const PUBLISH = {
  id: "publish",
  description: "Write the release notes file",
  depends_on: ["read", "count"],
  tool: "file_write",
  args: {
    path: "RELEASE-NOTES.md",
    content: { $join: ["# 2.4\n\n", { $from: "read", path: "content" }] },
    lines: { $from: "count", path: "stdout" },
    whole: { $from: "read" },
    raw: { $literal: { $from: "not a reference" } },
    argv: ["wc", "-l", { $from: "read", path: ["headers", "x.request.id"] }],
  },
  done_when: { description: "The file is written", required_keys: ["path"], checks: ["committed == `true`"] },
  timeout_s: 20,
  retries: 2,
  rollback_hint: "git checkout RELEASE-NOTES.md",
  estimate: { tokens: 0, cost: 0, seconds: 3 },
};
const BARE = { id: "bare", tool: "noop" };
const AGENT = { id: "agent", description: "Look around", tools_allowed: ["file_read", "file_search"] };

const row = (details, key) => details.rows.find((item) => item.key === key);
const arg = (details, name) => row(details, "args").args.find((item) => item.name === name);

test("every field of a step is a row, in the order an approver reads them", () => {
  const details = stepDetails(PUBLISH, { pauses: new Map() });
  assert.equal(details.id, "publish");
  assert.equal(details.description, "Write the release notes file");
  assert.deepEqual(
    details.rows.map((item) => item.key),
    ["description", "tool", "depends_on", "args", "done_when", "timeout_s", "retries", "rollback_hint", "estimate", "approval"],
  );
  assert.deepEqual(row(details, "tool").codes, ["file_write"]);
  assert.deepEqual(row(details, "depends_on").codes, ["read", "count"]);
  const done = row(details, "done_when");
  assert.deepEqual(
    done.parts.map((part) => [part.label, part.text || part.codes]),
    [["description", "The file is written"], ["required keys", ["path"]], ["checks", ["committed == `true`"]]],
  );
  assert.equal(row(details, "timeout_s").text, "20 s");
  assert.match(row(details, "retries").text, /^2\b/);
  assert.equal(row(details, "rollback_hint").text, "git checkout RELEASE-NOTES.md");
  assert.match(row(details, "estimate").text, /3 s/);
  for (const item of details.rows) assert.equal(item.absent, undefined, `${item.key} is present`);
});

test("references are shown as references: which step, which path, and the raw operator", () => {
  const details = stepDetails(PUBLISH);
  const plain = arg(details, "path");
  assert.equal(plain.shown, '"RELEASE-NOTES.md"');
  assert.deepEqual(plain.refs, []);
  assert.equal(plain.raw, null);
  assert.equal(plain.value, null);

  const lines = arg(details, "lines");
  assert.equal(lines.operator, "from");
  assert.equal(lines.shown, "{count.stdout}");
  assert.deepEqual(
    lines.refs.map(({ at, part, step, path, source }) => ({ at, part, step, path, source })),
    [{ at: "lines", part: null, step: "count", path: "stdout", source: "count.stdout" }],
  );
  assert.match(lines.refs[0].raw, /"\$from": "count", "path": "stdout"/);
  assert.match(lines.raw, /"\$from"/);

  const content = arg(details, "content");
  assert.equal(content.operator, "join");
  assert.equal(content.shown, '"# 2.4\\n\\n" + {read.content}');
  assert.equal(content.refs[0].part, 1);
  assert.equal(content.refs[0].source, "read.content");
  assert.match(content.raw, /"\$join"/);

  assert.equal(arg(details, "whole").shown, "{read}");
  assert.equal(arg(details, "whole").refs[0].path, "");

  // Nested: a reference inside a list keeps its place, and a path with a dot is a list.
  const argv = arg(details, "argv");
  assert.equal(argv.operator, null);
  assert.match(argv.shown, /"wc",\s+"-l",\s+\{read\.\["headers", "x\.request\.id"\]\}/);
  assert.equal(argv.refs[0].at, "argv[2]");

  // $literal is the value exactly as written: no reference in it.
  const raw = arg(details, "raw");
  assert.equal(raw.operator, "literal");
  assert.deepEqual(raw.refs, []);
  assert.match(raw.shown, /"\$from": "not a reference"/);
  assert.match(raw.note, /as written/);
});

test("without a run a referenced value is said to come from its step at run time", () => {
  const details = stepDetails(PUBLISH);
  assert.equal(arg(details, "lines").value.state, "runtime");
  assert.match(arg(details, "lines").value.text, /step count/);
  assert.match(arg(details, "lines").value.text, /run time/);
  assert.match(arg(details, "content").value.text, /step read/);
  assert.match(arg(details, "argv").value.text, /step read/);
});

test("with a run the resolved value is shown, and one that cannot be is said so", () => {
  const resolved = {
    args: {
      content: { text: '"# 2.4\\n\\nFixed the login page"', truncated: false },
      lines: { problem: "step 'count' has not succeeded in this run" },
      whole: { text: "{\n  \"content\": \"x\"\n}", truncated: true },
    },
  };
  const details = stepDetails(PUBLISH, { resolved });
  assert.deepEqual(
    { state: arg(details, "content").value.state, text: arg(details, "content").value.text },
    { state: "known", text: '"# 2.4\\n\\nFixed the login page"' },
  );
  assert.equal(arg(details, "lines").value.state, "unknown");
  assert.match(arg(details, "lines").value.text, /has not succeeded/);
  assert.equal(arg(details, "whole").value.truncated, true);
  assert.equal(arg(details, "argv").value.state, "unknown"); // the run gave nothing for it
  assert.equal(arg(details, "path").value, null); // a plain value is its own value
});

test("missing fields are named, so an approver sees what is absent", () => {
  const details = stepDetails(BARE, { pauses: new Map() });
  const absent = Object.fromEntries(details.rows.filter((item) => item.absent).map((item) => [item.key, item.absent]));
  assert.deepEqual(Object.keys(absent).sort(), [
    "args", "depends_on", "description", "done_when", "estimate", "retries", "rollback_hint", "timeout_s",
  ]);
  assert.equal(absent.rollback_hint, "no rollback hint");
  assert.match(absent.done_when, /^no done_when/);
  assert.match(absent.timeout_s, /^no timeout_s/);
  assert.equal(absent.description, "no description");
  assert.equal(absent.estimate, "no estimate");
  // Whether it pauses is unknown without the compiler's diagnostics, and said so.
  assert.match(row(stepDetails(BARE), "approval").absent, /not known/);

  // A done_when written as text is a description without checks.
  const vague = stepDetails({ ...BARE, done_when: "Looks fine" });
  assert.deepEqual(
    row(vague, "done_when").parts.map((part) => [part.label, part.text || null, part.absent || null]),
    [["description", "Looks fine", null], ["required keys", null, "no required keys"], ["checks", null, "no checks"]],
  );
});

test("an agent step lists the tools it may call and has no arguments of its own", () => {
  const details = stepDetails(AGENT, { pauses: new Map() });
  const tool = row(details, "tool");
  assert.equal(tool.label, "Tools allowed");
  assert.deepEqual(tool.codes, ["file_read", "file_search"]);
  assert.match(row(details, "args").absent, /agent/);
  assert.match(row(details, "timeout_s").absent, /agent/);
  assert.equal(row(details, "approval").text, "does not pause for approval");
});

test("the approval reason comes from the compiler's approval_required diagnostics", () => {
  const pauses = pausesFromDiagnostics([
    { code: "approval_required", severity: "info", message: "step 'publish' will wait for approval: scope file_write is listed in requires_approval_before; high risk", nodes: ["publish"], edges: [] },
    { code: "vague_step", severity: "warning", message: "step 'bare' is vague", nodes: ["bare"], edges: [] },
  ]);
  assert.deepEqual([...pauses], [["publish", ["scope file_write is listed in requires_approval_before", "high risk"]]]);
  const waits = row(stepDetails(PUBLISH, { pauses }), "approval");
  assert.equal(waits.flag, "pause");
  assert.match(waits.text, /scope file_write is listed in requires_approval_before; high risk/);
  assert.equal(row(stepDetails(BARE, { pauses }), "approval").text, "does not pause for approval");
  // The queue hands the same as a list of {step, reasons}.
  const listed = row(stepDetails(PUBLISH, { pauses: [{ step: "publish", reasons: ["high risk"] }] }), "approval");
  assert.match(listed.text, /high risk/);
});

test("a node's label wraps a long description instead of cutting it at 30 characters", () => {
  const description = "Summarise every supplier contract signed this quarter into one table for the board reviews";
  assert.equal(description.length, 90);
  const data = stepNodeData({ id: "summarise", description, tool: "echo" }, false);
  const lines = data.label.split("\n");
  assert.equal(lines[0], "summarise");
  assert.equal(lines.at(-1), "⚙ echo");
  assert.equal(lines.slice(1, -1).join(" "), description);
  assert.ok(lines.every((line) => line.length <= 34), lines.join("|"));
  assert.equal(data.lines, lines.length);
  assert.equal(data.title, `summarise\n${description}\n⚙ echo`);
  // Beyond four lines it is cut, and the title still has it whole.
  const long = "word ".repeat(60).trim();
  const cut = stepNodeData({ id: "x", description: long, tool: "echo" }, false);
  assert.equal(cut.lines, 6);
  assert.ok(cut.label.split("\n")[4].endsWith("…"));
  assert.ok(cut.title.includes(long));
});

test("a text of several lines is shown as it reads, with how many lines it has", () => {
  const step = { id: "notes", tool: "file_write", args: { path: "NOTES.md", content: "# 2.4\n\nfix: a\nfeat: b\n", title: "one\ntwo" } };
  const details = stepDetails(step);
  const content = arg(details, "content");
  assert.equal(content.shown, "# 2.4\n\nfix: a\nfeat: b\n");
  assert.equal(content.text, true);
  assert.equal(content.note, "text of 4 lines, shown as it reads; it ends with a line break");
  assert.equal(arg(details, "title").note, "text of 2 lines, shown as it reads");
  // A one-line string stays JSON, quoted: "42" and 42 read apart.
  assert.equal(arg(details, "path").shown, '"NOTES.md"');
});
