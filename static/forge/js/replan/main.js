// The replan view: pick a replan in the lineage and see both of its versions on one
// graph (model.js: fates, the reset subgraph as a group; layout.js; style.js), its panel
// beside it (rendered by the server), a step's details on click, and every step's details
// in the table below the graph (common/step-details.js). `?replan=N` names the replan
// shown, so a link can point at one. Test hook:
// window.forge.replan = {cy, ready, select(n), fates, selected, table}.
import { readInitialData } from "../common/initial-data.js";
import { StepTable, followSelection } from "../common/step-details.js";
import { focusElements } from "../graph/focus.js";
import { createViewer } from "../graph/viewer.js";
import { findStep } from "../model/document.js";
import { FATE_WORDS, renderStepDetail, shownVersion } from "./detail.js";
import { layoutReplan } from "./layout.js";
import { GROUP_ID, replanElements } from "./model.js";
import { REPLAN_STYLE } from "./style.js";

const data = readInitialData("replan-data");
const page = document.getElementById("replan-page");
const detail = document.getElementById("step-detail");
const sizes = Object.values(data.documents).map((doc) => (doc.steps || []).length);
const { cy } = createViewer(document.getElementById("graph"), {
  size: Math.max(0, ...sizes) * 2,
  filename: `run-${data.run.id}-replan`,
});
cy.style().fromJson([...cy.style().json(), ...REPLAN_STYLE]).update();

const table = new StepTable(document.getElementById("step-table"), { onSelect: (id) => showStep(id, { focus: true }) });
followSelection(cy, table);
const hook = { cy, ready: Promise.resolve(), fates: new Map(), selected: 0, select, table };
window.forge = Object.assign(window.forge || {}, { replan: hook });

function current() {
  const replan = data.replans[hook.selected - 1];
  return {
    replan,
    oldDoc: data.documents[String(replan.from)],
    newDoc: replan.to ? data.documents[String(replan.to)] : null,
  };
}

function select(index, { push = true } = {}) {
  const replan = data.replans[index - 1];
  if (!replan) return hook.ready;
  hook.selected = index;
  page.querySelectorAll("[data-replan]").forEach((element) => {
    if (element.tagName === "BUTTON") element.setAttribute("aria-pressed", String(Number(element.dataset.replan) === index));
    else element.hidden = Number(element.dataset.replan) !== index;
  });
  detail.hidden = true;
  if (push) {
    const url = new URL(window.location.href);
    url.searchParams.set("replan", String(index));
    window.history.replaceState(null, "", url);
  }
  const { oldDoc, newDoc } = current();
  const { nodes, edges, fates } = replanElements(replan, oldDoc, newDoc, data.statuses);
  hook.fates = fates;
  showSteps(replan, oldDoc, newDoc);
  cy.elements().remove();
  cy.add([...nodes, ...edges]);
  page.dataset.state = "drawing";
  hook.ready = layoutReplan(cy, GROUP_ID).then(() => {
    page.dataset.state = "ready";
    page.dataset.selected = String(index);
  });
  return hook.ready;
}

// Every step of the replan, each as the version the detail panel shows wrote it, tagged
// with its fate.
function showSteps(replan, oldDoc, newDoc) {
  const items = [];
  for (const [id, info] of hook.fates) {
    const version = shownVersion(replan, info);
    const step = findStep(version === replan.to ? newDoc : oldDoc, id);
    if (!step) continue;
    const key = String(version);
    items.push({ step, pauses: data.pauses[key], resolved: (data.resolved[key] || {})[id], mark: { kind: info.fate, text: markText(replan, info, version) } });
  }
  table.highlight(null);
  table.show(items);
}

// A step's tag in the list: its fate, the version it failed in for the failed one (not
// the version shown, which may be the new one), and which version's step is shown when
// the replan has two.
function markText(replan, info, version) {
  let fate = info.fate === "kept" && !replan.resume ? "keeps its result if unchanged" : FATE_WORDS[info.fate];
  if (info.fate === "failed") fate = `failed in v${replan.from}`;
  return replan.to ? `${fate} · as written in v${version}` : fate;
}

function showStep(id, { focus = false } = {}) {
  const info = hook.fates.get(id);
  if (!info) return;
  const { replan, oldDoc, newDoc } = current();
  renderStepDetail(detail, { id, info, replan, oldDoc, newDoc, statuses: data.statuses, pauses: data.pauses, resolved: data.resolved });
  if (focus) focusElements(cy, [id]);
}

cy.on("tap", "node[kind = 'step']", (event) => showStep(event.target.id()));
cy.on("tap", (event) => {
  if (event.target === cy) detail.hidden = true;
});

page.addEventListener("click", (event) => {
  const replanButton = event.target.closest("button[data-replan]");
  if (replanButton) {
    select(Number(replanButton.dataset.replan));
    return;
  }
  if (event.target.closest("[data-action=close-detail]")) {
    detail.hidden = true;
    cy.elements(":selected").unselect();
    return;
  }
  const chosen = event.target.closest("#step-detail [data-select-step]");
  if (chosen) {
    focusElements(cy, [chosen.dataset.selectStep]);
    return;
  }
  const focus = event.target.closest("[data-focus]");
  if (focus) {
    showStep(focus.dataset.focus, { focus: true });
    return;
  }
  const line = event.target.closest("li[data-steps]");
  if (line) focusElements(cy, line.dataset.steps.split(" ").filter(Boolean));
});

page.addEventListener("keydown", (event) => {
  const line = event.target.closest("li[data-steps]");
  if (line && (event.key === "Enter" || event.key === " ")) {
    event.preventDefault();
    focusElements(cy, line.dataset.steps.split(" ").filter(Boolean));
  }
});

select(data.selected, { push: false });
