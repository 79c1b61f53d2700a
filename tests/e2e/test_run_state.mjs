// Unit tests of the run page's pure modules (static/forge/js/run/state.js, sequence.js,
// and model/preview.js, which the run page and the approval queue share), run by
// node:test from tests/e2e/test_run_state.py. No DOM, no browser.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { previewLines, refusalOf } from "../../static/forge/js/model/preview.js";
import { resumability } from "../../static/forge/js/run/replan.js";
import { EventSequencer } from "../../static/forge/js/run/sequence.js";
import { axisTicks } from "../../static/forge/js/run/timeline.js";
import { SLOT_WAIT_MS, applyEvent, applyEvents, fromDetail, gauges, statusCounts, summary, waitingForAgent, waitingForSlot, waitingReason, withReplanNotes } from "../../static/forge/js/run/state.js";

const T0 = "2025-01-31T09:00:00.000Z";
const at = (ms) => new Date(Date.parse(T0) + ms).toISOString();

function detail(overrides = {}) {
  return {
    id: 7,
    plan_id: 3,
    plan_name: "Release notes",
    version: 1,
    status: "queued",
    started_by: "ada",
    created_at: T0,
    finished_at: null,
    replans: 0,
    last_seq: 0,
    budget: { used_steps: 0, used_tokens: 0, used_cost: 0, max_steps: 10, max_tokens: 1000, max_cost: null },
    max_replans: 2,
    failed_step: "",
    reset: [],
    preserved: [],
    blocked_reason: "",
    steps: ["fetch", "score", "report"].map((id, index) => ({
      step_id: id,
      plan_version: 1,
      status: "pending",
      attempt: 0,
      tool: "echo",
      args_hash: `h-${id}`,
      depends_on: index ? [["fetch", "score", "report"][index - 1]] : [],
      output: null,
      error: "",
      verdict: null,
      tokens: 0,
      cost: 0,
      approved_by: "",
      started_at: null,
      finished_at: null,
      latency_ms: null,
    })),
    ...overrides,
  };
}

let seq = 0;
function ev(event_type, fields = {}) {
  seq += 1;
  return {
    seq,
    event_type,
    step_id: null,
    transition: null,
    step_status: null,
    blocked_reason: "",
    facts: null,
    verdict: null,
    tokens: 0,
    cost: 0,
    latency_ms: null,
    actor: "",
    plan_version: 1,
    created_at: at(seq * 100),
    ...fields,
  };
}

function step(event_type, id, from, to, fields = {}) {
  return ev(event_type, { step_id: id, transition: [from, to], step_status: to, ...fields });
}

function run(event_type, from, to, fields = {}) {
  return ev(event_type, { transition: [from, to], ...fields });
}

// A run that fails its contract at "score", is resumed on v2 and succeeds.
function history() {
  seq = 0;
  return [
    run("run_started", "queued", "running", { facts: { steps: ["fetch", "score", "report"] } }),
    step("step_ready", "fetch", "pending", "ready"),
    step("step_started", "fetch", "ready", "running", { tokens: 40 }),
    step("step_succeeded", "fetch", "running", "succeeded", { facts: { rows: 3 }, verdict: { valid: true, errors: [] }, tokens: 25, latency_ms: 12 }),
    step("step_ready", "score", "pending", "ready"),
    step("step_started", "score", "ready", "running", { tokens: 40 }),
    step("step_invalid", "score", "running", "invalid", { facts: { risk: 14 }, verdict: { valid: false, errors: ["check 1 failed"] }, blocked_reason: "check 1 failed", tokens: 30 }),
    run("run_needs_replan", "running", "needs_replan", { blocked_reason: "step 'score' invalid", facts: { failed_step: "score", reset: ["report", "score"], preserved: ["fetch"], error: "check 1 failed" } }),
    run("run_resumed", "needs_replan", "running", { plan_version: 2, actor: "ada", facts: { steps: ["fetch", "score", "report"], preserved: ["fetch"], reset: ["score", "report"], added: [], removed: [], from_version: 1 } }),
    step("step_ready", "score", "pending", "ready", { plan_version: 2 }),
    step("step_started", "score", "ready", "running", { plan_version: 2 }),
    step("step_succeeded", "score", "running", "succeeded", { plan_version: 2, facts: { risk: 6 }, verdict: { valid: true, errors: [] } }),
    step("step_ready", "report", "pending", "ready", { plan_version: 2 }),
    step("step_started", "report", "ready", "running", { plan_version: 2 }),
    step("step_succeeded", "report", "running", "succeeded", { plan_version: 2, facts: { committed: true } }),
    run("run_succeeded", "running", "succeeded", { plan_version: 2 }),
  ];
}

test("folding a run's events gives its final state", () => {
  const final = applyEvents(fromDetail(detail()), history());

  assert.equal(final.status, "succeeded");
  assert.equal(final.version, 2);
  assert.equal(final.replans, 1);
  assert.equal(final.lastSeq, 16);
  assert.equal(final.finishedAt, at(1600));
  assert.deepEqual(
    Object.fromEntries(final.order.map((id) => [id, [final.steps[id].status, final.steps[id].attempt]])),
    { fetch: ["succeeded", 1], score: ["succeeded", 1], report: ["succeeded", 1] },
  );
  assert.deepEqual(final.steps.fetch.output, { rows: 3 });
  assert.deepEqual(final.lastResume.preserved, ["fetch"]);
  // Reserved 40 at each start, settled with the real use: 25 + 30 tokens.
  assert.deepEqual(final.budget, { usedSteps: 4, usedTokens: 55, usedCost: 0, maxSteps: 10, maxTokens: 1000, maxCost: null });
});

test("needs_replan records the failed step, the reset set and the preserved set", () => {
  const events = history();
  const waiting = applyEvents(fromDetail(detail()), events.slice(0, 8));

  assert.equal(waiting.status, "needs_replan");
  assert.equal(waiting.failedStep, "score");
  assert.equal(waiting.failureError, "check 1 failed");
  assert.deepEqual(waiting.reset, ["report", "score"]);
  assert.deepEqual(waiting.preserved, ["fetch"]);
  assert.equal(waiting.steps.score.status, "invalid");
  assert.deepEqual(waiting.steps.score.verdict, { valid: false, errors: ["check 1 failed"] });
  assert.equal(waiting.blockedReason, "step 'score' invalid");
});

test("a page that starts from a snapshot and applies the rest equals one that saw everything", () => {
  const events = history();
  const everything = applyEvents(fromDetail(detail()), events);
  for (let cut = 0; cut <= events.length; cut += 1) {
    const snapshot = applyEvents(fromDetail(detail()), events.slice(0, cut));
    const resumed = applyEvents(snapshot, events.slice(cut));
    assert.deepEqual(summary(resumed), summary(everything), `cut at ${cut}`);
  }
});

test("an event already applied changes nothing, so a reconnection's overlap is harmless", () => {
  const events = history();
  const once = applyEvents(fromDetail(detail()), events);
  const twice = applyEvents(applyEvents(fromDetail(detail()), events.slice(0, 6)), events);

  assert.deepEqual(summary(twice), summary(once));
  assert.equal(applyEvent(once, events[3]), once);
});

test("the sequencer hands events over in seq order, holds those after a gap and drops repeats", () => {
  const events = history();
  const sequencer = new EventSequencer(2);

  assert.deepEqual(sequencer.push([events[0], events[1]]), []); // seqs 1 and 2: already applied
  assert.deepEqual(sequencer.push([events[4], events[3]]).map((e) => e.seq), []); // 5 and 4 wait for 3
  assert.equal(sequencer.hasGap, true);
  assert.deepEqual(sequencer.push([events[2], events[3]]).map((e) => e.seq), [3, 4, 5]);
  assert.equal(sequencer.hasGap, false);
  assert.equal(sequencer.lastSeq, 5);
  assert.deepEqual(sequencer.push([events[4], events[5]]).map((e) => e.seq), [6]);
});

test("the timing of a step comes from its start and end events", () => {
  const events = history();
  const state = applyEvents(fromDetail(detail()), events.slice(0, 4));

  assert.equal(state.steps.fetch.startedAt, at(300));
  assert.equal(state.steps.fetch.finishedAt, at(400));
  assert.equal(state.steps.fetch.latencyMs, 12);
});

test("an approval names its approver and a waiting step keeps its reason", () => {
  seq = 0;
  const state = applyEvents(fromDetail(detail()), [
    run("run_started", "queued", "running"),
    step("step_awaiting_approval", "fetch", "pending", "awaiting_approval", { blocked_reason: "plan requires approval before scope 'file_write'" }),
    run("run_awaiting_approval", "running", "awaiting_approval", { blocked_reason: "steps wait for approval" }),
  ]);
  assert.equal(state.steps.fetch.error, "plan requires approval before scope 'file_write'");
  assert.equal(state.status, "awaiting_approval");

  const approved = applyEvents(state, [step("step_approved", "fetch", "awaiting_approval", "ready", { actor: "grace" })]);
  assert.equal(approved.steps.fetch.approvedBy, "grace");
  assert.equal(approved.steps.fetch.status, "ready");
});

test("gauges and counts describe the budget and the steps", () => {
  const state = applyEvents(fromDetail(detail()), history().slice(0, 7));

  assert.deepEqual(
    gauges(state).map(({ key, used, max, ratio }) => [key, used, max, ratio]),
    [["steps", 2, 10, 0.2], ["tokens", 55, 1000, 0.055], ["cost", 0, null, null]],
  );
  assert.deepEqual(statusCounts(state), [["pending", 1], ["succeeded", 1], ["invalid", 1]]);
});

test("a running step's reservation from the page's data is settled by its end event", () => {
  seq = 0;
  const data = detail({ status: "running", last_seq: 3, budget: { used_steps: 1, used_tokens: 40, used_cost: 0.5, max_steps: null, max_tokens: null, max_cost: null } });
  data.steps[0] = { ...data.steps[0], status: "running", attempt: 1, reserved_tokens: 40, reserved_cost: 0.5 };
  seq = 3;
  const state = applyEvents(fromDetail(data), [step("step_succeeded", "fetch", "running", "succeeded", { tokens: 12, cost: 0.1 })]);

  assert.equal(state.budget.usedTokens, 12);
  assert.ok(Math.abs(state.budget.usedCost - 0.1) < 1e-9);
  assert.equal(state.steps.fetch.tokens, 12);
});

test("applying events never changes the state it was given", () => {
  const events = history();
  const start = applyEvents(fromDetail(detail()), events.slice(0, 5));
  const copy = structuredClone(start);

  const after = applyEvents(start, events.slice(5));

  assert.deepEqual(start, copy);
  assert.notEqual(after.steps, start.steps);
  assert.equal(after.steps.fetch, start.steps.fetch); // an untouched step keeps its identity
});

// A file_write preview as forge.runners.files makes it.
function preview(text, summary = "write board/review.md (+1 -1)") {
  return { kind: "file_write", summary, text, hash: `hash-of-${text.length}-${summary.length}` };
}
const FIRST = preview("--- /dev/null\n+++ b/board/review.md\n@@ -0,0 +1 @@\n+# Review\n", "write board/review.md (+1 -0)");
const SECOND = preview("--- a/board/review.md\n+++ b/board/review.md\n@@ -1 +1 @@\n-draft\n+# Review\n");

test("a waiting step carries its preview, and an approval records the preview it approved", () => {
  seq = 0;
  const waiting = applyEvents(fromDetail(detail()), [
    run("run_started", "queued", "running"),
    step("step_awaiting_approval", "fetch", "pending", "awaiting_approval", { facts: { preview: FIRST }, blocked_reason: "scope file_write" }),
  ]);
  assert.deepEqual(waiting.steps.fetch.preview, FIRST);
  assert.equal(waiting.steps.fetch.previewHash, FIRST.hash);
  assert.equal(waiting.steps.fetch.previewChanged, false);

  const approved = applyEvents(waiting, [step("step_approved", "fetch", "awaiting_approval", "ready", { actor: "grace", facts: { preview_hash: FIRST.hash } })]);
  assert.equal(approved.steps.fetch.approvedBy, "grace");
  assert.equal(approved.steps.fetch.approvedPreview, FIRST.hash);
});

test("a step sent back for approval with a new preview voids the approval and says the preview changed", () => {
  seq = 0;
  const state = applyEvents(fromDetail(detail()), [
    run("run_started", "queued", "running"),
    step("step_awaiting_approval", "fetch", "pending", "awaiting_approval", { facts: { preview: FIRST } }),
    step("step_approved", "fetch", "awaiting_approval", "ready", { actor: "grace", facts: { preview_hash: FIRST.hash } }),
    step("step_started", "fetch", "ready", "running", { tokens: 40 }),
    step("step_awaiting_approval", "fetch", "running", "awaiting_approval", { facts: { preview: SECOND }, blocked_reason: "its preview differs now", tokens: 3 }),
  ]);
  const fetch = state.steps.fetch;

  assert.equal(fetch.status, "awaiting_approval");
  assert.deepEqual([fetch.approvedBy, fetch.approvedPreview], ["", ""]);
  assert.deepEqual([fetch.previewHash, fetch.previewChanged], [SECOND.hash, true]);
  assert.equal(fetch.error, "its preview differs now");
  // Back from running: the reservation is settled with what the refused call used, and
  // the timeline bar ends (forge.runtime.state._SETTLES_USAGE has this event too).
  assert.deepEqual([state.budget.usedTokens, fetch.tokens, fetch.reservedTokens], [3, 3, 0]);
  assert.equal(fetch.finishedAt, at(500));
});

test("a step's artifacts come from the event that settled it, and the page's data", () => {
  seq = 0;
  const log = { name: "stderr", media_type: "text/plain", size: 12, truncated: false, record: "r-1" };
  const data = detail();
  data.steps[1] = { ...data.steps[1], artifacts: [log] };
  const state = applyEvents(fromDetail(data), [
    run("run_started", "queued", "running"),
    step("step_started", "fetch", "ready", "running"),
    step("step_failed", "fetch", "running", "failed", { blocked_reason: "exit 3", artifacts: [{ ...log, record: "r-2" }] }),
  ]);

  assert.deepEqual(state.steps.score.artifacts, [log]);
  assert.deepEqual(state.steps.fetch.artifacts, [{ ...log, record: "r-2" }]);
  assert.deepEqual(fromDetail(detail()).steps.fetch.artifacts, []);
});

test("a diff's lines are told apart: headers, hunks, added and removed lines", () => {
  const text = "--- a/x.md\n+++ b/x.md\n@@ -1,2 +1,2 @@\n keep\n--- a rule\n+new\n\\ No newline at end of file\n";
  assert.deepEqual(
    previewLines({ kind: "file_write", text }).map((line) => line.kind),
    ["meta", "meta", "hunk", "text", "del", "add", "meta"],
  );
  // Only diffs are coloured: a shell command's "-c" is just text.
  assert.deepEqual(
    previewLines({ kind: "shell", text: "argv: python3 -c 'print(1)'\n-c\n" }).map((line) => line.kind),
    ["text", "text"],
  );
});

test("a ready step that no slot took for a while waits for a free worker slot", () => {
  seq = 0;
  const events = [
    run("run_started", "queued", "running", { facts: { steps: ["fetch", "score", "report"] } }),
    step("step_ready", "fetch", "pending", "ready"),
  ];
  const state = applyEvents(fromDetail(detail()), events);
  const readyAt = Date.parse(events[1].created_at);

  assert.deepEqual(waitingForSlot(state, readyAt + 100), []);
  assert.deepEqual(waitingForSlot(state, readyAt + SLOT_WAIT_MS), ["fetch"]);
  const started = applyEvent(state, step("step_started", "fetch", "ready", "running"));
  assert.deepEqual(waitingForSlot(started, readyAt + SLOT_WAIT_MS * 5), []);
  // Ready when the page loaded: it has waited at least that long.
  const loaded = fromDetail(detail({ status: "running", steps: detail().steps.map((s, i) => (i ? s : { ...s, status: "ready" })) }));
  assert.deepEqual(waitingForSlot(loaded, Date.parse(T0)), ["fetch"]);
  const cancelled = applyEvent(state, run("run_cancelled", "running", "cancelled"));
  assert.deepEqual(waitingForSlot(cancelled, readyAt + SLOT_WAIT_MS * 5), []);
});

test("a ready step of an agent's run waits for the agent, never for a worker slot", () => {
  seq = 0;
  const events = [
    run("run_started", "queued", "running", { facts: { steps: ["fetch", "score", "report"] } }),
    step("step_ready", "fetch", "pending", "ready"),
  ];
  const state = applyEvents(fromDetail(detail({ executor: "agent", agent_steps: ["fetch"] })), events);
  const readyAt = Date.parse(events[1].created_at);

  assert.deepEqual(state.agentSteps, ["fetch"]);
  assert.deepEqual(waitingForSlot(state, readyAt + SLOT_WAIT_MS * 5), []);
  assert.deepEqual(waitingForAgent(state), ["fetch"]);
  const started = applyEvent(state, step("step_started", "fetch", "ready", "running"));
  assert.deepEqual(waitingForAgent(started), []);
  // A worker's run waits for no agent.
  assert.deepEqual(waitingForAgent(applyEvents(fromDetail(detail()), events)), []);
});

test("a snapshot pinned at a seq and a stream whose first events overlap it count each start once", () => {
  // Issue 12, problem 5: the stream's first frames repeat events the snapshot already
  // holds. The server pins the snapshot to one seq (runs/snapshot.py); the fold then
  // skips everything at or below it, so a step that ran once says attempt 1 and the
  // gauges count one step per start.
  const events = history();
  const pinned = fromDetail(detail());
  const atFour = applyEvents(pinned, events.slice(0, 4)); // fetch started and succeeded
  const streamed = applyEvents(atFour, events.slice(1, 7)); // the socket repeats 2..4

  assert.deepEqual([streamed.steps.fetch.status, streamed.steps.fetch.attempt], ["succeeded", 1]);
  assert.deepEqual([streamed.steps.score.status, streamed.steps.score.attempt], ["invalid", 1]);
  assert.deepEqual(
    gauges(streamed).map(({ key, used }) => [key, used]),
    [["steps", 2], ["tokens", 55], ["cost", 0]],
  );
  assert.equal(streamed.steps.fetch.tokens, 25);
});

// --- Who a run waits for, replans followed live, re-runs (issue 25) -----------------------

const CASES = JSON.parse(readFileSync(new URL("../fixtures/blocked_reasons.json", import.meta.url), "utf8")).cases;

test("the page words a run's wait exactly as the server does", () => {
  for (const item of CASES) {
    assert.equal(waitingReason(item.approvals, item.reconciliations, item.reviews, item.refused || []), item.reason);
  }
});

const RECONCILE = "step 'fetch' needs reconciling by an operator: it may have performed its side effect";

test("a step to reconcile names itself and the operator, with or without a run event", () => {
  seq = 0;
  const running = applyEvents(fromDetail(detail()), [
    run("run_started", "queued", "running"),
    step("step_ready", "fetch", "pending", "ready"),
    step("step_started", "fetch", "ready", "running"),
    step("step_needs_reconciliation", "fetch", "running", "needs_reconciliation", { blocked_reason: "worker lost; a non-repeatable side effect may have happened" }),
  ]);
  // No run event said so: the fold works it out, as forge.runtime.state does.
  assert.equal(running.status, "running");
  assert.equal(running.blockedReason, RECONCILE);

  const waiting = applyEvents(running, [run("run_awaiting_approval", "running", "awaiting_approval", { blocked_reason: RECONCILE })]);
  assert.equal(waiting.blockedReason, RECONCILE);
  const reconciled = applyEvents(waiting, [
    step("step_reconciled", "fetch", "needs_reconciliation", "succeeded", { facts: { ok: 1 }, actor: "olga" }),
    step("step_ready", "score", "pending", "ready"),
    run("run_continued", "awaiting_approval", "running"),
  ]);
  assert.equal(reconciled.blockedReason, "");
  assert.equal(summary(reconciled).blockedReason, "");
});

test("a milestone waiting for review is known to the page and named in the reason", () => {
  seq = 0;
  const reached = applyEvents(fromDetail(detail()), [
    run("run_started", "queued", "running"),
    ev("milestone_reached", { facts: { milestone: "facts", title: "Gather the facts", steps: ["fetch"] } }),
    run("run_awaiting_approval", "running", "awaiting_approval"),
  ]);
  assert.deepEqual(reached.awaitingReview, ["facts"]);
  assert.equal(reached.blockedReason, "milestone 'facts' waits for review by an approver who did not write this version");

  const reviewed = applyEvents(reached, [ev("milestone_reviewed", { facts: { milestone: "facts" }, actor: "grace" })]);
  assert.deepEqual(reviewed.awaitingReview, []);
  assert.equal(reviewed.blockedReason, "");
  assert.deepEqual(fromDetail(detail({ awaiting_review: ["facts"] })).awaitingReview, ["facts"]);
});

test("the planner's work on a replan is followed note by note until the run resumes", () => {
  const events = history().slice(0, 8);
  const failed = applyEvents(fromDetail(detail()), events);
  const waitsFor = { who: "approvers", author: "ada", approvers: ["grace"], more: 0, why: ["the policy asks a person to approve every replan"] };

  const working = applyEvents(failed, [ev("run_replan_started", { actor: "llm:m", blocked_reason: "the planner llm:m is working on a replan of v1", facts: { planner: "llm:m", on_behalf_of: "ada" } })]);
  assert.equal(working.replan.phase, "working");
  assert.equal(working.status, "needs_replan");
  assert.equal(working.blockedReason, "step 'score' invalid"); // a note changes no state
  const proposed = applyEvents(working, [ev("run_replan_proposed", { actor: "llm:m", facts: { planner: "llm:m", version: 2, proposal: 5, waits_for: waitsFor } })]);
  assert.deepEqual([proposed.replan.phase, proposed.replan.version, proposed.replan.waitsFor], ["proposed", 2, waitsFor]);
  const approved = applyEvents(proposed, [ev("run_replan_approved", { actor: "grace", facts: { version: 2, approver: "grace" } })]);
  assert.deepEqual([approved.replan.phase, approved.replan.version, approved.replan.approver], ["approved", 2, "grace"]);
  const resumed = applyEvents(approved, [run("run_resumed", "needs_replan", "running", { plan_version: 2, actor: "grace", facts: { steps: ["fetch", "score", "report"], preserved: ["fetch"], reset: ["score", "report"] } })]);
  assert.equal(resumed.replan, null);
  assert.equal(resumed.lastResume.actor, "grace");

  // A page opened while the planner works starts from the notes it was rendered with.
  const opened = withReplanNotes(failed, [ev("run_replan_started", { facts: { planner: "llm:m" } })]);
  assert.equal(opened.replan.phase, "working");
});

test("a re-run's kept steps are succeeded with the earlier run's output, never started", () => {
  seq = 0;
  const state = applyEvents(fromDetail(detail()), [
    run("run_started", "queued", "running", { facts: { steps: ["fetch", "score", "report"], rerun_of: "7", rerun: { chosen: ["score"], steps: ["score", "report"], preserved: ["fetch"], unfinished: [] } } }),
    step("step_preserved", "fetch", "pending", "succeeded", { facts: { rows: 3 }, verdict: { valid: true, errors: [] } }),
    step("step_ready", "score", "pending", "ready"),
  ]);

  assert.deepEqual([state.steps.fetch.status, state.steps.fetch.attempt, state.steps.fetch.kept], ["succeeded", 0, true]);
  assert.deepEqual(state.steps.fetch.output, { rows: 3 });
  assert.deepEqual([state.rerunOf, state.rerunSteps], [7, ["score"]]);
  assert.equal(state.budget.usedSteps, 0);
  const page = fromDetail(detail({ rerun_of: 7, rerun_steps: ["score"], reruns: [9], steps: detail().steps.map((s, i) => (i ? s : { ...s, status: "succeeded" })) }));
  assert.deepEqual([page.rerunOf, page.reruns, page.steps.fetch.kept], [7, [9], true]);
});

test("a superseded version never offers to resume, whatever the policy", () => {
  const version = { number: 2, status: "superseded", superseded_by: 3, has_errors: false, author: "ada" };
  for (const policy of ["never", "read_only"]) {
    const answer = resumability(version, policy);
    assert.equal(answer.ok, false);
    assert.equal(answer.mark, "cannot resume");
    assert.match(answer.why, /v2 was superseded by v3/);
  }
  assert.equal(resumability({ ...version, status: "awaiting_approval" }, "read_only").mark, "needs a person, or the policy");
});

test("a preview whose call will be refused carries its refusal; others carry none", () => {
  // Issue 25, item 3: such a preview is never offered for approval.
  const refusal = { code: "host_not_allowed", reason: "host 'evil.example' (port 443) is not on the allow list", hint: "add evil.example" };
  assert.deepEqual(refusalOf({ kind: "http_request", hash: "h", runnable: false, refusal }), refusal);
  assert.equal(refusalOf({ kind: "http_request", hash: "h", runnable: true }), null);
  assert.equal(refusalOf({ kind: "file_write", hash: "h" }), null); // stored before runnable existed
  assert.equal(refusalOf(null), null);
  assert.deepEqual(refusalOf({ kind: "call", runnable: false }), { code: "", reason: "", hint: "" });
});

test("the timeline's axis is marked at round times from the run's start", () => {
  assert.deepEqual(axisTicks(1040), [0, 250, 500, 750, 1000]);
  assert.deepEqual(axisTicks(987), [0, 200, 400, 600, 800]);
  assert.deepEqual(axisTicks(62_000), [0, 15_000, 30_000, 45_000, 60_000]);
  assert.deepEqual(axisTicks(250_000), [0, 60_000, 120_000, 180_000, 240_000]);
  assert.deepEqual(axisTicks(0), [0]);
  for (const span of [1, 7, 3_700, 10_400, 3_900_000, 40 * 86_400_000]) {
    const ticks = axisTicks(span);
    assert.ok(ticks.length >= 2 && ticks.length <= 6, `${span}: ${ticks}`);
    assert.ok(ticks.at(-1) <= span, `${span}: ${ticks}`);
  }
});
