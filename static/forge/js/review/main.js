// The approval queue: each waiting version or step decided in place, the counts (the
// sections', the topbar's badge) kept right as items leave, and the diff graph of a
// version drawn on demand. A step whose preview changed since the page was drawn (409
// preview_changed) shows its new preview in place, to be read and approved again.
// Test hook: window.forge.review = {graphs, decided}.
import { Api, ApiError } from "../common/api.js";
import { replaceChildren } from "../common/dom.js";
import { readInitialData } from "../common/initial-data.js";
import { previewCard } from "../common/preview-card.js";
import { toast } from "../common/toast.js";
import { CHANGED_SENTENCE } from "../model/preview.js";
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

function itemLeft(item, decision) {
  const kind = item.dataset.kind;
  const label = item.querySelector("form.decision").dataset.label;
  const section = item.closest(".review-section");
  item.remove();
  decided.push({ key: item.dataset.key, decision });
  const done = { approve: "Approved", review: "Reviewed" }[decision] || "Rejected";
  toast(`${done} ${label}.`, { kind: decision === "reject" ? "info" : "success" });
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
  const notice = item.querySelector(".preview-changed");
  notice.textContent = CHANGED_SENTENCE;
  notice.hidden = false;
  return CHANGED_SENTENCE;
}

for (const form of page.querySelectorAll("form.decision")) {
  const item = form.closest(".review-item");
  bindDecision(form, {
    api,
    onDecided: (decision) => itemLeft(item, decision),
    onRefused: (problem) =>
      item.dataset.kind === "step" && problem instanceof ApiError && problem.code === "preview_changed" ? showNewPreview(item, form) : null,
  });
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
    graphs.set(item.dataset.key, drawDiffGraph(panel.querySelector(".graph"), data.graphs[item.dataset.key]));
  }
});

page.dataset.state = "ready";
window.forge = Object.assign(window.forge || {}, { review: { graphs, decided } });
