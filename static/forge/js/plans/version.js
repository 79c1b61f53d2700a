// A version's page: its graph painted with its stored diagnostics, every step's details
// (common/step-details.js), the problems list, and the review form. Test hook:
// window.forge.graph = {cy, ready, table}.
import { readInitialData } from "../common/initial-data.js";
import { focusElements } from "../graph/focus.js";
import { drawMilestones } from "../graph/milestones.js";
import { ProblemsPanel } from "../graph/problems.js";
import { applyDiagnostics, syncElements } from "../graph/render.js";
import { createViewer } from "../graph/viewer.js";
import { steps } from "../model/document.js";
import { Api } from "../common/api.js";
import { replaceChildren } from "../common/dom.js";
import { StepTable, followSelection } from "../common/step-details.js";
import { pausesFromDiagnostics } from "../model/step-details.js";
import { threadsSection } from "../review/threads.js";
import { bindReview } from "./review.js";

const data = readInitialData("graph-data");
const version = data.version;
const { cy, layout } = createViewer(document.getElementById("graph"), {
  size: steps(version.document).length,
  filename: `plan-${data.plan.id}-v${version.number}`,
});
const problems = new ProblemsPanel(document.getElementById("problems"), {
  onActivate: (diagnostic, ids) => focusElements(cy, ids),
});
syncElements(cy, version.document);
problems.show(version.diagnostics, applyDiagnostics(cy, version.diagnostics));
const ready = layout().then(() => {
  drawMilestones(cy, version.document);
  return window.forge.graph;
});
// Every step's details below the graph, the selected one highlighted (and the other way
// round). Whether a step pauses is known from the diagnostics of a version that compiles.
const table = new StepTable(document.getElementById("step-table"), { onSelect: (id) => focusElements(cy, [id]) });
const pauses = version.has_errors ? null : pausesFromDiagnostics(version.diagnostics);
table.show(steps(version.document).map((step) => ({ step, pauses })));
followSelection(cy, table);
window.forge = Object.assign(window.forge || {}, { graph: { cy, ready, table } });
bindReview(document.getElementById("review-form"), { api: data.api, planId: data.plan.id, number: version.number });

// Review threads: the whole version's, and the selected step's (GET versions/{id}/threads).
const api = new Api(data.api);
const list = document.getElementById("threads-list");
let threads = [];
function selectedStep() {
  const node = cy.nodes(":selected").filter((n) => n.data("kind") === "step");
  return node.length === 1 ? node.data("stepId") : "";
}
function showThreads() {
  const step = selectedStep();
  const onChange = () => loadThreads();
  const common = { api, versionId: version.id, canComment: Boolean(data.can_comment), onChange };
  const known = new Set(steps(version.document).map((s) => s.id));
  const sections = [
    threadsSection({ ...common, title: "On the whole version", stepId: "", empty: "No comments on the whole version.",
      threads: threads.filter((t) => !t.step_id || !known.has(t.step_id)) }),
  ];
  if (step) {
    sections.push(threadsSection({ ...common, title: `On step ${step}`, stepId: step, empty: "No comments on this step.",
      threads: threads.filter((t) => t.step_id === step) }));
  } else {
    const others = threads.filter((t) => t.step_id && known.has(t.step_id));
    if (others.length) {
      sections.push(threadsSection({ ...common, canComment: false, versionId: null, title: "On steps (select a step to comment)", stepId: "", empty: "", threads: others }));
    }
  }
  replaceChildren(list, ...sections);
  list.dataset.state = "ready";
}
async function loadThreads() {
  const answer = await api.get(`versions/${version.id}/threads`);
  threads = answer.threads;
  showThreads();
}
cy.on("select unselect", "node", () => showThreads());
loadThreads().catch(() => {
  list.textContent = "The review threads could not be loaded.";
});
