// The run's plan graph: the editor's read-only viewer (graph/viewer.js, dagre layout) with
// each step painted by its status. Painting touches only the nodes whose classes or
// label changed, in one batch, so a live event costs one node's update.
import { runLayout } from "../graph/layout.js";
import { syncElements } from "../graph/render.js";
import { createViewer } from "../graph/viewer.js";
import { steps } from "../model/document.js";
import { STEP_LABELS } from "./state.js";
import { RUN_STYLE } from "./style.js";

const PULSE_MS = 700;

export class RunGraph {
  constructor(container, { document: doc, filename, onSelect }) {
    const { cy } = createViewer(container, { size: steps(doc).length, filename });
    cy.style().fromJson([...cy.style().json(), ...RUN_STYLE]).update();
    this.cy = cy;
    this.container = container;
    this.offset = null;
    this.pulseOn = false;
    this.timer = null;
    syncElements(cy, doc);
    cy.on("tap", "node[kind = 'step']", (event) => onSelect(event.target.data("stepId")));
  }

  layout() {
    return runLayout(this.cy, { fit: true });
  }

  // A new version after a resume: new steps and edges, laid out again when the shape
  // changed.
  setDocument(doc) {
    const changed = syncElements(this.cy, doc);
    this.cy.elements().removeData("_runClasses");
    return changed ? this.layout() : Promise.resolve();
  }

  paint(state) {
    const { cy } = this;
    const reset = new Set(state.status === "needs_replan" ? state.reset : []);
    const preserved = new Set(state.status === "needs_replan" ? state.preserved : []);
    let running = false;
    cy.batch(() => {
      cy.nodes().forEach((node) => {
        const base = node.data("base");
        if (base === undefined || node.data("kind") !== "step") return;
        const id = node.id();
        const step = state.steps[id];
        const status = step ? step.status : "pending";
        if (status === "running") running = true;
        const extra = [`s-${status}`];
        if (reset.has(id)) extra.push("in-reset");
        if (preserved.has(id)) extra.push("in-preserved");
        if (state.status === "needs_replan" && state.failedStep === id) extra.push("failed-step");
        if (status === "running" && this.pulseOn) extra.push("pulse");
        const wanted = `${base} ${extra.join(" ")}`;
        if (node.data("_runClasses") !== wanted) {
          node.data("_runClasses", wanted);
          node.classes(wanted);
        }
        if (node.data("status") !== status) node.data("status", status);
        const kept = preserved.has(id) || (state.lastResume !== null && state.lastResume.preserved.includes(id) && status === "succeeded");
        const label = `${node.data("label")}\n${statusLine(step, status, reset.has(id), kept, state)}`;
        if (node.data("runLabel") !== label) node.data("runLabel", label);
      });
      cy.edges().forEach((edge) => {
        const base = edge.data("base");
        if (base === undefined) return;
        const source = state.steps[edge.source().id()];
        const done = source && source.status === "succeeded";
        const wanted = done ? `${base} e-done` : base;
        if (edge.data("_runClasses") !== wanted) {
          edge.data("_runClasses", wanted);
          edge.classes(wanted);
        }
      });
    });
    this.pulse(running);
  }

  // Running steps pulse: a class toggled on a timer.
  pulse(running) {
    if (running && this.timer === null) {
      this.timer = setInterval(() => {
        this.pulseOn = !this.pulseOn;
        this.cy.batch(() => {
          this.cy.nodes(".s-running").forEach((node) => {
            node.toggleClass("pulse", this.pulseOn);
            node.data("_runClasses", node.classes().join(" "));
          });
        });
      }, PULSE_MS);
    } else if (!running && this.timer !== null) {
      clearInterval(this.timer);
      this.timer = null;
      this.pulseOn = false;
    }
  }

  // Cytoscape caches where its container is on the page and refreshes that only on
  // resize and scroll; a banner shown above the graph moves it without either, and
  // clicks would then land beside the steps.
  noticeMoves() {
    const box = this.container.getBoundingClientRect();
    const offset = `${box.left + window.scrollX},${box.top + window.scrollY},${box.width},${box.height}`;
    if (offset !== this.offset) {
      this.offset = offset;
      this.cy.resize();
    }
  }

  select(stepId) {
    const node = this.cy.getElementById(stepId);
    if (node.empty()) return;
    this.cy.elements(":selected").unselect();
    node.select();
  }

  unselect() {
    this.cy.elements(":selected").unselect();
  }
}

function statusLine(step, status, inReset, kept, state) {
  let text = `● ${STEP_LABELS[status] || status}`;
  if (step && step.attempt > 1) text += ` · attempt ${step.attempt}`;
  if (step && step.kept && state.rerunOf !== null) text += ` · kept from #${state.rerunOf}`;
  else if (kept && state.lastResume && state.status !== "needs_replan") text += ` · kept from v${state.lastResume.fromVersion}`;
  else if (kept) text += " · kept";
  else if (inReset && status !== "failed" && status !== "invalid") text += " · will re-run";
  return text;
}
