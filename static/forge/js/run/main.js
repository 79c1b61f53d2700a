// The live run page. It starts from the run's detail rendered into the page (json_script,
// with a last_seq that matches its steps), then follows the run's websocket from that
// seq: events go through the EventSequencer (seq order, nothing twice, gaps refilled from
// GET /runs/{id}/events) and are folded into the state by state.js's applyEvent; the
// graph, panels, timeline and drawer are redrawn from the state once per frame.
//
// Buttons call the API; the page does not take the API's answer as state but waits for
// the events the action caused, so there is one way for the page to change.
//
// Test hook: window.forge.run = {cy, ready, lastSeq(), state(), summary(), applied(),
// connections(), dropConnection(), disconnect(), reconnect()}.
import { Api } from "../common/api.js";
import { readInitialData } from "../common/initial-data.js";
import { toast } from "../common/toast.js";
import { StepDrawer } from "./drawer.js";
import { RunGraph } from "./graph.js";
import { Panels } from "./panels.js";
import { ReplanPanel } from "./replan.js";
import { RerunDialog } from "./rerun.js";
import { EventSequencer } from "./sequence.js";
import { applyEvents, fromDetail, isFinal, stepsWithStatus, summary, withReplanNotes } from "./state.js";
import { RunStream } from "./stream.js";
import { Timeline } from "./timeline.js";

const data = readInitialData("run-data");
const api = new Api(data.api);
const skew = Date.parse(data.server_time) - Date.now();
const now = () => Date.now() + skew;
const root = document.getElementById("run-page");

// The planner's notes since the run last needed a replan come beside the detail.
let state = withReplanNotes(fromDetail(data.run), data.replan_notes);
const documents = new Map([[state.version, data.document]]);
let shownVersion = state.version;
const sequencer = new EventSequencer(state.lastSeq);
let applied = 0;

const graph = new RunGraph(document.getElementById("graph"), {
  document: data.document,
  filename: `run-${state.runId}`,
  onSelect: (id) => openStep(id),
});
const timeline = new Timeline(document.getElementById("timeline"), { onSelect: (id) => openStep(id) });
const panels = new Panels({
  root,
  user: data.user,
  urls: data.urls,
  onOpenStep: (id, focus) => openStep(id, focus),
  onCancel: () => act(() => api.post(`runs/${state.runId}/cancel`), "Cancelled the run"),
});
const replan = new ReplanPanel(document.getElementById("replan-panel"), {
  api,
  user: data.user,
  urls: data.urls,
  policy: data.policy,
  onResume: (number) => act(() => api.post(`runs/${state.runId}/resume`, { version: number }), `Resumed on v${number}`),
});
const rerunDialog = data.user.can_start ? new RerunDialog(document.getElementById("rerun-dialog"), { api, runId: state.runId, urls: data.urls }) : null;
const drawer = new StepDrawer(document.getElementById("step-drawer"), {
  api,
  runId: state.runId,
  user: data.user,
  onClose: () => graph.unselect(),
  onOpenStep: (id) => openStep(id),
  // The approval binds the preview the approver saw (409 preview_changed otherwise).
  // Under approval rules an approval may count without being enough: the step's rules
  // in the answer say what it still waits for.
  onApprove: (id, comment, previewHash) =>
    act(() => api.post(`runs/${state.runId}/steps/${id}/approve`, { comment, preview_hash: previewHash }), (answer) => approvedWords(id, answer)),
  onReject: (id, comment) => act(() => api.post(`runs/${state.runId}/steps/${id}/reject`, { comment }), `Rejected ${id}`),
  onReconcile: (id, status, output, comment) =>
    act(() => api.post(`runs/${state.runId}/steps/${id}/reconcile`, { status, output, comment }), `Reconciled ${id}`),
  // The step shows another preview than the page did: fetch the events it missed.
  onStale: () => catchUp().catch(() => toast("Could not load the new preview: reload the page.", { kind: "error" })),
  onRerun: rerunDialog ? (id) => rerunDialog.open(state, [id]) : null,
});
const stream = new RunStream(data.socket, {
  after: () => sequencer.lastSeq,
  onEvents: receive,
  onStatus: (status) => {
    panels.setLive(status);
    // While the socket cannot connect (a proxy without websockets, a restart), the page
    // still moves on: each retry also asks the REST API for what it missed.
    if (status === "reconnecting") catchUp().catch(() => {});
  },
});

function currentDocument() {
  return documents.get(shownVersion) || data.document;
}

function openStep(id, focus = "") {
  if (!id) return;
  graph.select(id);
  drawer.open(id, state, currentDocument(), focus);
}

// An action: the API call, a short confirmation, and the stream reopened if it had
// stopped (a finished run can still be reconciled). Errors go back to the caller's form.
async function act(call, done) {
  const answer = await call();
  toast(typeof done === "function" ? done(answer) : done, { kind: "success" });
  stream.start();
}

function approvedWords(id, answer) {
  const step = ((answer && answer.steps) || []).find((candidate) => candidate.step_id === id);
  if (!step || step.status !== "awaiting_approval" || !step.rules) return `Approved ${id}`;
  const open = step.rules.filter((rule) => !rule.satisfied).map((rule) => `rule ${rule.id} ${rule.lacking}`);
  return open.length ? `Your approval of ${id} counts; it still waits: ${open.join("; ")}` : `Approved ${id}`;
}

// --- Events ------------------------------------------------------------------------------

let gapTimer = null;
let catchingUp = null;
const EVENTS_PAGE = 1000;

function receive(events) {
  const ready = sequencer.push(events);
  if (ready.length) {
    state = applyEvents(state, ready);
    applied += ready.length;
    schedule();
  }
  if (sequencer.hasGap && gapTimer === null) {
    // The socket never skips a seq; if one is missing anyway, ask for it.
    gapTimer = setTimeout(fillGap, 400);
  }
}

async function fillGap() {
  gapTimer = null;
  if (!sequencer.hasGap) return;
  try {
    await catchUp();
  } catch {
    gapTimer = setTimeout(fillGap, 2000);
  }
}

// Every stored event after the last applied one, page by page, through the sequencer.
function catchUp() {
  if (catchingUp) return catchingUp;
  catchingUp = (async () => {
    for (;;) {
      const after = sequencer.lastSeq;
      const events = await api.get(`runs/${state.runId}/events`, { query: { after, limit: EVENTS_PAGE } });
      receive(events);
      if (events.length < EVENTS_PAGE || sequencer.lastSeq === after) return;
    }
  })().finally(() => {
    catchingUp = null;
  });
  return catchingUp;
}

// A resume moves the run to a new version: its document comes from the API.
async function ensureDocument(version) {
  if (documents.has(version)) return documents.get(version);
  const full = await api.get(`plans/${state.planId}/versions/${version}`);
  documents.set(version, full.document);
  return full.document;
}

let frame = null;
let drawing = Promise.resolve();

function schedule() {
  if (frame !== null) return;
  frame = requestAnimationFrame(() => {
    frame = null;
    drawing = drawing.then(render).catch((problem) => toast(`Could not redraw the run: ${problem.message}`, { kind: "error" }));
  });
}

async function render() {
  if (state.version !== shownVersion) {
    try {
      const doc = await ensureDocument(state.version);
      shownVersion = state.version;
      await graph.setDocument(doc);
      document.getElementById("run-goal").textContent = doc.goal || "";
    } catch (problem) {
      toast(`Could not load v${state.version}: ${problem.message}`, { kind: "error" });
    }
  }
  const at = now();
  panels.render(state, at, currentDocument());
  replan.render(state);
  graph.noticeMoves();
  graph.paint(state);
  timeline.render(state, at);
  drawer.update(state, currentDocument());
  // A finished run sends nothing more once no step is still running.
  if (isFinal(state) && !stepsWithStatus(state, "running").length && stream.running) stream.stop();
}

// The duration and running bars move with the clock.
setInterval(() => {
  if (isFinal(state)) return;
  const at = now();
  panels.tick(state, at);
  if (stepsWithStatus(state, "running").length) timeline.render(state, at);
}, 1000);

window.addEventListener("resize", () => timeline.render(state, now()));

// --- Start -------------------------------------------------------------------------------

const ready = graph.layout().then(async () => {
  await render();
  if (!isFinal(state) || stepsWithStatus(state, "running").length) stream.start();
  else panels.setLive("stopped");
  root.dataset.state = "ready";
  return window.forge.run;
});

window.forge = Object.assign(window.forge || {}, {
  run: {
    cy: graph.cy,
    ready,
    lastSeq: () => state.lastSeq,
    state: () => state,
    summary: () => summary(state),
    applied: () => applied,
    connections: () => stream.connections,
    dropConnection: () => stream.drop(),
    // Tests: go offline, let the run move on, come back and catch up from lastSeq.
    disconnect: () => stream.stop("offline"),
    reconnect: () => stream.start(),
  },
});
