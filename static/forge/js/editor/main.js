// The plan editor page: reads the version it starts from (json_script "editor-data"),
// builds the store, the graph and the panels, and maps actions (toolbar buttons,
// [data-action] anywhere on the page, keyboard shortcuts) to edits. Each behaviour lives
// in its own module; this file only wires them together.
//
// Test hook: window.forge.editor = {cy, ready, store, settled, replan, text, threads}; `ready` resolves once the
// plan is drawn, laid out, compiled and the tool catalogue is loaded; settled() once the
// latest edit is drawn and laid out and the view has stopped moving (both animate).
import { Api } from "../common/api.js";
import { readInitialData } from "../common/initial-data.js";
import { toast } from "../common/toast.js";
import { createGraph } from "../graph/cy.js";
import { fitAll, fitVisible, focusElements, zoomBy } from "../graph/focus.js";
import { placedPositions, rebowDataEdges } from "../graph/layout.js";
import { Minimap } from "../graph/minimap.js";
import { ProblemsPanel } from "../graph/problems.js";
import { addStep, newStepId, removeEdges, removeSteps, setDeliverable, steps } from "../model/document.js";
import { emptyCatalogue, loadCatalogue } from "./catalogue.js";
import { LiveCompiler } from "./compile.js";
import { enableConnecting } from "./connect.js";
import { exportDocument } from "./export.js";
import { GraphView } from "./graph-view.js";
import { fillHelp } from "./help.js";
import { Inspector } from "./inspector.js";
import { ReplanMode } from "./replan-mode.js";
import { ReviewThreads } from "./review-threads.js";
import { StepSearch } from "./search.js";
import { SaveDialog } from "./save-dialog.js";
import { bindShortcuts } from "./shortcuts.js";
import { StatusView } from "./status.js";
import { EditorStore } from "./store.js";
import { TextView } from "./text-view.js";

const $ = (id) => document.getElementById(id);
const data = readInitialData("editor-data");
const api = new Api(data.api);
const store = new EditorStore({
  document: data.version.document,
  diagnostics: data.version.diagnostics,
  version: data.version,
});
const root = $("editor");
const cy = createGraph($("graph"), { size: steps(store.document).length, editable: true });
const catalogue = emptyCatalogue();
const graphView = new GraphView(cy, store);
const compiler = new LiveCompiler(api, store);
const problems = new ProblemsPanel($("problems"), {
  onActivate: (diagnostic, ids) => {
    // The text alone hides the graph: show it, unless the text does not parse (kept).
    if (TEXT_ONLY.has(root.dataset.view) && !setView("graph")) return;
    focusElements(cy, ids.length ? ids : []);
  },
});
graphView.onPaint(() => problems.show(store.diagnostics, graphView.located));
const reviewThreads = new ReviewThreads({
  api,
  store,
  user: data.user,
  graphView,
  banner: $("review-banner"),
  summary: $("review-threads-summary"),
  submit: $("submit-review-button"),
});
const inspector = new Inspector($("inspector"), { cy, store, catalogue, threads: reviewThreads });
const textView = new TextView({ root: $("text-view"), area: $("text-source"), error: $("text-error"), store });
new StatusView(
  {
    root,
    version: $("version-label"),
    badge: $("status-badge"),
    dirty: $("dirty-flag"),
    counts: $("problem-counts"),
    state: $("compile-state"),
    draft: $("draft-compile"),
    save: $("save-button"),
    approve: $("approve-button"),
    run: $("run-button"),
    undo: root.querySelector("[data-action=undo]"),
    redo: root.querySelector("[data-action=redo]"),
  },
  { store, user: data.user },
);
const replan = new ReplanMode($("replan-banner"), { api, planId: data.plan.id, replan: data.replan });
const saveDialog = new SaveDialog($("save-dialog"), {
  api,
  store,
  planId: data.plan.id,
  planName: data.plan.name,
  replan,
  commented: () => textView.hasComments,
  // A blank plan's first save created it: go on in its own editor.
  onCreated: (plan) => window.location.assign(data.urls.created.replace("{id}", String(plan.id))),
  onSaved: (version) => {
    const throughRun = replan.enabled;
    store.markSaved(version);
    // A replan keeps the address the run page linked to: reopening it edits the run's
    // version again, in replan mode. Otherwise the editor's address is the latest version.
    if (!throughRun) history.replaceState(null, "", data.urls.edit);
    toast(throughRun ? `Saved version ${version.number} as a replan of run #${data.replan.run}.` : `Saved version ${version.number}.`, { kind: "success" });
  },
});
const minimap = new Minimap(cy, $("minimap"));
// The text alone hides the graph: a step found is shown on it (unless the text is broken).
const search = new StepSearch($("search-box"), {
  cy,
  store,
  beforeShow: () => !TEXT_ONLY.has(root.dataset.view) || setView("graph"),
});
const connecting = enableConnecting(cy, store);

// Dragging a step draws a dependency (edgehandles' draw mode); in move mode it moves the
// step instead, and the places given by hand are kept with the version when it is saved.
let moving = false;
function setMoving(on) {
  moving = on;
  if (on) connecting.disableDrawMode();
  else connecting.enableDrawMode();
  const button = $("move-button");
  button.setAttribute("aria-pressed", String(on));
  root.dataset.moving = String(on);
  root.querySelector(".canvas-hint").textContent = on
    ? "Drag steps to place them; Auto-layout puts them back. Press M again to draw dependencies."
    : "Drag from one step onto another: the second then depends on the first.";
}
cy.on("dragfree", "node[base]", (event) => {
  rebowDataEdges(event.target);
  if (moving) store.setLayout(placedPositions(cy));
});
fillHelp($("help-list"));

// Views: the graph, the text alone (yaml, json), or both side by side (split, in the
// text's current format). Returns false, leaving the view as it was, when the text does
// not parse and would be hidden or rewritten: the text view says why.
const TEXT_ONLY = new Set(["yaml", "json"]);

function setView(view) {
  const before = root.dataset.view;
  if (view === before) return true;
  let shown;
  if (view === "graph") shown = textView.hide();
  else if (view === "split") shown = textView.show(textView.visible ? textView.format : "yaml");
  else shown = textView.show(view);
  if (!shown) {
    toast("The text has an error: fix it or undo it first. It is kept as you typed it.", { kind: "error" });
    return false;
  }
  for (const tab of root.querySelectorAll("[data-view]")) {
    tab.setAttribute("aria-pressed", String(tab.dataset.view === view));
  }
  root.dataset.view = view;
  cy.resize();
  textView.refresh();
  // The graph got narrower or wider: show the whole plan in what is visible of it now,
  // rather than leave half of it under the text pane.
  if (view === "split" || before === "split") {
    fitVisible(cy);
    minimap.schedule();
  }
  return true;
}

function selectedSteps() {
  return cy.nodes(":selected").filter((node) => node.data("kind") === "step");
}

function updateEmptyHint() {
  $("empty-hint").hidden = steps(store.document).length > 0;
}

async function addStepAction() {
  const after = selectedSteps();
  const id = newStepId(store.document);
  const dependsOn = after.length === 1 ? [after.data("stepId")] : [];
  store.edit((doc) => addStep(doc, { id, dependsOn }), { reason: "add" });
  cy.elements(":selected").unselect();
  cy.getElementById(id).select();
  await graphView.rendering;
  const node = cy.getElementById(id);
  const box = node.renderedBoundingBox();
  if (box.x1 < 0 || box.y1 < 0 || box.x2 > cy.width() || box.y2 > cy.height()) {
    focusElements(cy, [id], { select: false });
  }
}

function deleteSelection() {
  const selected = cy.elements(":selected");
  if (selected.empty()) return;
  const stepIds = [];
  const edges = [];
  selected.forEach((element) => {
    if (element.isEdge()) edges.push([element.data("dep"), element.data("step")]);
    else if (element.data("kind") === "step") stepIds.push(element.data("stepId"));
    else element.connectedEdges().forEach((edge) => edges.push([edge.data("dep"), edge.data("step")]));
  });
  store.edit((doc) => removeSteps(removeEdges(doc, edges), stepIds), { reason: "delete" });
}

function goTo(template, number) {
  window.location.assign(template.replace("{n}", String(number)));
}

const ACTIONS = {
  "add-step": addStepAction,
  "delete-selection": deleteSelection,
  undo: () => store.undo(),
  redo: () => store.redo(),
  save: () => saveDialog.open(),
  "submit-review": () => reviewThreads.submit(),
  "toggle-deliverable": () => {
    const selected = selectedSteps();
    if (selected.length !== 1) return toast("Select one step to make it the deliverable.");
    const id = selected.data("stepId");
    store.edit((doc) => setDeliverable(doc, doc.deliverable === id ? null : id), { reason: "deliverable" });
  },
  fit: () => fitAll(cy),
  "zoom-in": () => zoomBy(cy, 1.25),
  "zoom-out": () => zoomBy(cy, 0.8),
  layout: () => graphView.autoLayout(),
  "toggle-move": () => setMoving(!moving),
  "toggle-overview": () => {
    const canvas = $("minimap");
    canvas.hidden = !canvas.hidden;
    if (!canvas.hidden) minimap.schedule();
  },
  "toggle-text": () => setView(textView.visible ? "graph" : "yaml"),
  "view-split": () => setView("split"),
  "view-graph": () => setView("graph"),
  "view-yaml": () => setView("yaml"),
  "view-json": () => setView("json"),
  search: () => search.show(),
  "next-problem": () => {
    const items = [...$("problems").querySelectorAll("li.problem")];
    if (!items.length) return;
    const current = items.findIndex((item) => item.classList.contains("active"));
    const next = items[(current + 1) % items.length];
    next.focus();
    problems.activate(next);
  },
  escape: () => {
    const dialog = document.querySelector("dialog[open]");
    if (dialog) dialog.close();
    else if (document.activeElement && document.activeElement !== document.body) document.activeElement.blur();
    else cy.elements(":selected").unselect();
  },
  help: () => $("help-dialog").showModal(),
  "export-json": () => exportDocument({ api, store, cy, planId: data.plan.id, format: "json" }),
  "export-yaml": () => exportDocument({ api, store, cy, planId: data.plan.id, format: "yaml" }),
  "export-mermaid": () => exportDocument({ api, store, cy, planId: data.plan.id, format: "mermaid" }),
  "export-dot": () => exportDocument({ api, store, cy, planId: data.plan.id, format: "dot" }),
  "export-png": () => exportDocument({ api, store, cy, planId: data.plan.id, format: "png" }),
  approve: () => goTo(`${data.urls.version}#review`, store.version.number),
  run: () => goTo(data.urls.run, store.version.number),
};

function run(action) {
  const handler = ACTIONS[action];
  if (!handler) return;
  Promise.resolve(handler()).catch((problem) => toast(problem.message || String(problem), { kind: "error" }));
}

document.addEventListener("click", (event) => {
  const trigger = event.target.closest("[data-action]");
  if (!trigger || trigger.disabled) return;
  event.preventDefault();
  const menu = trigger.closest("details.menu");
  if (menu) menu.open = false;
  run(trigger.dataset.action);
});
bindShortcuts(document, run);
$("help-dialog").querySelector("[data-close]").addEventListener("click", () => $("help-dialog").close());
window.addEventListener("beforeunload", (event) => {
  if (store.dirty) event.preventDefault();
});
store.addEventListener("document", updateEmptyHint);
store.addEventListener("version", () => {
  for (const link of document.querySelectorAll("[data-version-link]")) {
    link.href = data.urls.version.replace("{n}", String(store.version.number));
  }
});
$("minimap").hidden = steps(store.document).length < 12;

const ready = (async () => {
  updateEmptyHint();
  await graphView.render("initial");
  performance.mark("forge:graph-drawn"); // bench/editor.py reads these marks
  await Promise.all([
    replan.check(),
    compiler.run(),
    reviewThreads.load(),
    loadCatalogue(api, catalogue).then(
      () => inspector.render(),
      () => toast("The tool catalogue could not be loaded.", { kind: "error" }),
    ),
  ]);
  root.dataset.state = "ready";
  performance.mark("forge:editor-ready");
  return window.forge.editor;
})();
// Settled also waits out a viewport animation (a focused problem glides into view), so a
// point read from the graph afterwards is where the element stays.
const viewportStill = () =>
  new Promise((resolve) => {
    const poll = () => (cy.animated() ? requestAnimationFrame(poll) : resolve());
    poll();
  });
const settled = () => graphView.rendering.then(viewportStill);
window.forge = Object.assign(window.forge || {}, { editor: { cy, ready, store, settled, replan, text: textView, threads: reviewThreads } });
