// The approval queue: each waiting version or step decided in place, the counts (the
// sections', the topbar's badge) kept right as items leave, and the diff graph of a
// version drawn on demand. A step whose preview changed since the page was drawn (409
// preview_changed) shows its new preview in place, to be read and approved again.
// Each card lists its steps' details (common/step-details.js). Test hook:
// window.forge.review = {graphs, decided, tables}.
import { Api, ApiError } from "../common/api.js";
import { replaceChildren } from "../common/dom.js";
import { readInitialData } from "../common/initial-data.js";
import { previewCard } from "../common/preview-card.js";
import { StepTable, followSelection } from "../common/step-details.js";
import { toast } from "../common/toast.js";
import { focusElements } from "../graph/focus.js";
import { steps } from "../model/document.js";
import { CHANGED_SENTENCE, refusalOf } from "../model/preview.js";
import { bindDecision } from "./decision.js";
import { drawDiffGraph } from "./diff-graph.js";

const data = readInitialData("review-data");
const api = new Api(data.api);
const page = document.getElementById("review-page");
const graphs = new Map();
const decided = [];

function adjustCount(element, by) {
  const value = Math.max(0, Number(element.textContent) + by);
  element.textContent = String(value);
  return value;
}

// What an approval the approval rules did not find enough yet still waits for, in the
// server's words ([] when it was enough): the version's `waiting_for`, or the step's
// open rules in the run's answer.
function stillWaiting(item, answer) {
  if (!answer) return [];
  if (item.dataset.kind === "version") return answer.version_status === "awaiting_approval" ? answer.waiting_for || [] : [];
  if (item.dataset.kind !== "step") return [];
  const step = (answer.steps || []).find((candidate) => candidate.step_id === item.dataset.step);
  if (!step || step.status !== "awaiting_approval" || !step.rules) return [];
  return step.rules.filter((rule) => !rule.satisfied).map((rule) => `rule ${rule.id} ${rule.lacking}`);
}

function itemLeft(item, decision, answer) {
  const kind = item.dataset.kind;
  const label = item.querySelector("form.decision").dataset.label;
  const section = item.closest(".review-section");
  item.remove();
  decided.push({ key: item.dataset.key, decision });
  const waiting = decision === "approve" ? stillWaiting(item, answer) : [];
  if (waiting.length) {
    toast(`Your approval of ${label} counts; it still waits: ${waiting.join("; ")}.`, { kind: "info" });
  } else {
    const done = { approve: "Approved", review: "Reviewed" }[decision] || "Rejected";
    toast(`${done} ${label}.`, { kind: decision === "reject" ? "info" : "success" });
  }
  document.querySelectorAll(`[data-count-for=${kind}]`).forEach((element) => adjustCount(element, -1));
  const badge = document.getElementById("review-count");
  if (badge && adjustCount(badge, -1) === 0) badge.hidden = true;
  if (!section.querySelector(".review-item")) section.querySelector(".section-empty").hidden = false;
  if (!page.querySelector(".review-item")) document.getElementById("review-empty").hidden = false;
}

// The step's preview as the run shows it now (GET /runs/{id}), in place of the old one;
// the form then binds the new hash. Returns the sentence the form shows.
async function showNewPreview(item, form) {
  const run = await api.get(`runs/${form.dataset.run}`);
  const step = (run.steps || []).find((candidate) => candidate.step_id === form.dataset.step);
  if (!step || step.status !== "awaiting_approval" || !step.preview) {
    return "This step no longer waits for approval: refresh the queue.";
  }
  replaceChildren(item.querySelector(".preview-slot"), previewCard(step.preview));
  form.dataset.previewHash = step.preview.hash;
  // The new preview's call may be one its runner will refuse: then it cannot be approved.
  const approve = form.querySelector("[data-decision=approve]");
  if (approve && refusalOf(step.preview)) approve.remove();
  const notice = item.querySelector(".preview-changed");
  notice.textContent = CHANGED_SENTENCE;
  notice.hidden = false;
  return CHANGED_SENTENCE;
}

for (const form of page.querySelectorAll("form.decision")) {
  const item = form.closest(".review-item");
  bindDecision(form, {
    api,
    onDecided: (decision, answer) => itemLeft(item, decision, answer),
    onRefused: (problem) =>
      item.dataset.kind === "step" && problem instanceof ApiError && problem.code === "preview_changed" ? showNewPreview(item, form) : null,
  });
}

// Each card's steps, readable without opening anything: a version's every step (tagged
// with what changed since the last approved version), a waiting step with the values
// the run gives its arguments. Selecting a step selects its node once the graph is open.
const tables = new Map();
function diffMarks(graph) {
  const marks = new Map();
  if (!graph.diff) return marks;
  const since = `since v${graph.baseline}`;
  for (const id of graph.diff.added_steps) marks.set(id, { kind: "added", text: `added ${since}` });
  for (const change of graph.diff.changed_steps) {
    marks.set(change.id, { kind: "changed", text: `${change.changes.map((c) => c.field).join(", ")} changed ${since}` });
  }
  return marks;
}
for (const slot of page.querySelectorAll("[data-steps-for]")) {
  const key = slot.dataset.stepsFor;
  const table = new StepTable(slot, {
    onSelect: (id) => {
      const graph = graphs.get(key);
      if (graph) focusElements(graph.cy, [id]);
    },
  });
  const graph = data.graphs[key];
  const step = (data.steps || {})[key];
  if (graph) {
    const marks = diffMarks(graph);
    table.show(steps(graph.to).map((item) => ({ step: item, pauses: graph.pauses, mark: marks.get(item.id) })));
  } else if (step) {
    table.show([{ step: step.step, pauses: step.pauses, resolved: step.resolved }]);
  }
  tables.set(key, table);
}

page.addEventListener("click", (event) => {
  const toggle = event.target.closest("[data-action=toggle-graph]");
  if (!toggle) return;
  const item = toggle.closest(".review-item");
  const panel = item.querySelector(".mini-graph");
  const open = panel.hidden;
  panel.hidden = !open;
  toggle.setAttribute("aria-expanded", String(open));
  toggle.textContent = open ? "Hide the graph" : "Show on the graph";
  if (open && !graphs.has(item.dataset.key)) {
    const drawn = drawDiffGraph(panel.querySelector(".graph"), data.graphs[item.dataset.key]);
    graphs.set(item.dataset.key, drawn);
    const table = tables.get(item.dataset.key);
    if (table) {
      followSelection(drawn.cy, table);
      if (table.selected) drawn.ready.then(() => focusElements(drawn.cy, [table.selected]));
    }
  }
});

page.dataset.state = "ready";
window.forge = Object.assign(window.forge || {}, { review: { graphs, decided, tables } });
