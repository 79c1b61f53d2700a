// The run page's additions to the plan graph's stylesheet (graph/style.js), as data:
// one class per step status (`s-<status>`), the replan highlights, and the pulse of
// running steps (a class toggled on a timer: Cytoscape's style transitions can leave a
// half-faded halo behind when a step finishes mid-transition). run.css uses the same colours for the legend, chips and timeline.
import { heightForLines } from "../graph/style.js";

export const RUN_COLOURS = {
  pending: "#98a2b3",
  ready: "#1570ef",
  readyBg: "#ffffff",
  waiting: "#dc6803",
  waitingBg: "#fffaeb",
  running: "#1570ef",
  runningBg: "#eff8ff",
  succeeded: "#039855",
  succeededBg: "#ecfdf3",
  failed: "#d92d20",
  failedBg: "#fef3f2",
  reconcile: "#7a5af8",
  reconcileBg: "#f4f3ff",
  muted: "#98a2b3",
  mutedBg: "#f2f4f7",
  ink: "#1d2330",
};

const C = RUN_COLOURS;

export const RUN_STYLE = [
  // The status line under the plan's label needs one more line of height.
  { selector: "node.step[lines]", style: { height: heightForLines(1) } },
  { selector: "node[runLabel]", style: { label: "data(runLabel)" } },
  {
    selector: "node.s-pending",
    style: { "border-color": C.pending, "border-width": 1.5, "background-color": "#ffffff", color: "#475467" },
  },
  {
    selector: "node.s-ready",
    style: { "border-color": C.ready, "border-width": 2.5, "background-color": C.readyBg },
  },
  {
    selector: "node.s-awaiting_approval",
    style: { "border-color": C.waiting, "border-width": 3, "background-color": C.waitingBg },
  },
  {
    selector: "node.s-running",
    style: {
      "border-color": C.running,
      "border-width": 3,
      "background-color": C.runningBg,
      "underlay-color": C.running,
      "underlay-shape": "round-rectangle",
      "underlay-opacity": 0.08,
      "underlay-padding": 3,
    },
  },
  { selector: "node.s-running.pulse", style: { "underlay-opacity": 0.3, "underlay-padding": 11 } },
  {
    selector: "node.s-succeeded",
    style: { "border-color": C.succeeded, "border-width": 2.5, "background-color": C.succeededBg },
  },
  {
    selector: "node.s-failed, node.s-invalid",
    style: { "border-color": C.failed, "border-width": 3, "background-color": C.failedBg },
  },
  {
    selector: "node.s-needs_reconciliation",
    style: { "border-color": C.reconcile, "border-width": 3, "background-color": C.reconcileBg },
  },
  {
    selector: "node.s-cancelled, node.s-skipped",
    style: { "border-color": C.muted, "border-width": 1.5, "background-color": C.mutedBg, color: "#667085", opacity: 0.75 },
  },
  {
    selector: "node.s-reset",
    style: { "border-color": C.pending, "border-style": "dashed", "border-width": 2, "background-color": "#ffffff" },
  },
  // After needs_replan: what starts over is dashed, what is kept has a green halo, and the
  // step that failed stands out.
  { selector: "node.in-reset", style: { "border-style": "dashed", "border-width": 3 } },
  { selector: "node.in-reset.s-pending", style: { "border-color": C.failed } },
  {
    selector: "node.in-preserved",
    style: {
      "underlay-color": C.succeeded,
      "underlay-opacity": 0.22,
      "underlay-padding": 6,
      "underlay-shape": "round-rectangle",
    },
  },
  { selector: "node.failed-step", style: { "border-width": 4.5, "border-style": "solid" } },
  // Edges out of finished steps are drawn darker: the path the run has taken.
  { selector: "edge.e-done", style: { "line-color": "#6ce9a6", "target-arrow-color": "#32d583", width: 2 } },
  // Selection stays visible over the status colours.
  {
    selector: "node:selected",
    style: {
      "underlay-color": "#3457d5",
      "underlay-opacity": 0.2,
      "underlay-padding": 8,
      "underlay-shape": "round-rectangle",
    },
  },
];
