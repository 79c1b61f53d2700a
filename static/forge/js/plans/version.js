// A version's page: its graph painted with its stored diagnostics, the problems list, and
// the review form. Test hook: window.forge.graph = {cy, ready}.
import { readInitialData } from "../common/initial-data.js";
import { focusElements } from "../graph/focus.js";
import { drawMilestones } from "../graph/milestones.js";
import { ProblemsPanel } from "../graph/problems.js";
import { applyDiagnostics, syncElements } from "../graph/render.js";
import { createViewer } from "../graph/viewer.js";
import { steps } from "../model/document.js";
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
window.forge = Object.assign(window.forge || {}, { graph: { cy, ready } });
bindReview(document.getElementById("review-form"), { api: data.api, planId: data.plan.id, number: version.number });
