// Unit tests of static/forge/js/model/generation.js (the "New plan from a goal" page's
// pure model), run by node:test from tests/e2e/test_generation_model.py.
import assert from "node:assert/strict";
import { test } from "node:test";

import { attemptLines, elapsedNow, elapsedText, nextStep } from "../../static/forge/js/model/generation.js";

const working = (fields = {}) => ({
  id: 4, status: "working", attempt: 2, max_attempts: 3, elapsed_seconds: 12.4, editor: null,
  progress: "attempt 2 of 3: the last answer had a cycle",
  attempts: [{ number: 1, code: "does_not_compile", problems: ["[cycle] dependency cycle: a -> b -> a"] }],
  ...fields,
});

test("elapsed time reads in seconds, then minutes and seconds", () => {
  assert.equal(elapsedText(0), "0 s");
  assert.equal(elapsedText(12.9), "12 s");
  assert.equal(elapsedText(125), "2 min 05 s");
  assert.equal(elapsedText(-3), "0 s");
});

test("elapsed time moves on between polls while the planner works, and stops when it is done", () => {
  assert.equal(elapsedNow(working(), 1000, 3500), 14.9);
  assert.equal(elapsedNow(working({ status: "proposed" }), 1000, 3500), 12.4);
  assert.equal(elapsedNow(working({ status: "cancelled" }), 1000, 9000), 12.4);
});

test("while it works the page says which attempt and why the last went back", () => {
  assert.deepEqual(nextStep(working()), { next: "poll", line: "Attempt 2 of 3: the last answer had a cycle…" });
  assert.deepEqual(attemptLines(working()), [
    { code: "does_not_compile", text: "Attempt 1: sent back: [cycle] dependency cycle: a -> b -> a" },
  ]);
});

test("a saved draft opens the editor; a failure keeps the form; a cancel says nothing was saved", () => {
  const url = "/plans/3/edit/?version=1";
  assert.deepEqual(nextStep(working({ status: "proposed", editor: url })), { next: "open", line: "Opening your draft in the editor…", url });
  assert.equal(nextStep(working({ status: "does_not_compile", editor: url })).next, "open");
  assert.equal(nextStep(working({ status: "proposed", editor: null })).next, "poll");
  const failed = nextStep(working({ status: "failed", progress: "the planner proposed no plan: overloaded [model_http_error]" }));
  assert.deepEqual(failed, { next: "failed", line: "The planner proposed no plan: overloaded [model_http_error]" });
  assert.equal(nextStep(working({ status: "cancelled" })).next, "cancelled");
  assert.match(nextStep(working({ status: "cancelled" })).line, /no plan was saved/);
});
