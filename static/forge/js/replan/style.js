// The replan graph's additions to the plan stylesheet (graph/style.js), as data: one
// colour per fate (model.js) and the reset subgraph as a dashed amber outline around its
// steps (a node's fate line is counted in its label's lines by model.js, which sizes it).
// review.css uses the same colours for the legend and the chips. Added is blue here, not
// the diff page's green, because green means "kept its result" on the run pages.

export const REPLAN_COLOURS = {
  failed: "#d92d20",
  failedBg: "#fef3f2",
  kept: "#039855",
  keptBg: "#ecfdf3",
  added: "#1570ef",
  addedBg: "#eff8ff",
  removed: "#98a2b3",
  removedBg: "#f2f4f7",
  changed: "#7a5af8",
  changedBg: "#f4f3ff",
  group: "#dc6803",
  groupBg: "#fff7ed",
};

const C = REPLAN_COLOURS;

export const REPLAN_STYLE = [
  {
    selector: "node.reset-group",
    style: {
      shape: "round-rectangle",
      "background-color": C.groupBg,
      "background-opacity": 0.75,
      "border-color": C.group,
      "border-style": "dashed",
      "border-width": 2.5,
      padding: 22,
      label: "data(label)",
      color: "#93370d",
      "font-size": 12,
      "font-weight": 600,
      "text-valign": "top",
      "text-halign": "center",
      "text-margin-y": -6,
      "text-wrap": "none",
    },
  },
  {
    selector: "node.r-failed",
    style: {
      "border-color": C.failed,
      "border-width": 4,
      "background-color": C.failedBg,
      "underlay-color": C.failed,
      "underlay-opacity": 0.16,
      "underlay-padding": 7,
      "underlay-shape": "round-rectangle",
    },
  },
  { selector: "node.r-failed.r-gone", style: { "border-style": "dashed", opacity: 0.85 } },
  { selector: "node.r-kept", style: { "border-color": C.kept, "border-width": 3, "background-color": C.keptBg } },
  { selector: "node.r-added", style: { "border-color": C.added, "border-width": 3, "background-color": C.addedBg } },
  {
    selector: "node.r-removed",
    style: {
      "border-color": C.removed,
      "border-style": "dashed",
      "border-width": 2.5,
      "background-color": C.removedBg,
      color: "#667085",
      opacity: 0.8,
    },
  },
  { selector: "node.r-changed", style: { "border-color": C.changed, "border-width": 3, "background-color": C.changedBg } },
  { selector: "node.r-rerun", style: { "border-color": "#b9c0cc", "border-width": 1.5, "background-color": "#ffffff" } },
  { selector: "node.r-waiting", style: { "border-color": "#d0d5dd", "background-color": "#fcfcfd", color: "#475467" } },
  {
    selector: "edge.r-edge-added",
    style: { "line-color": C.added, "target-arrow-color": C.added, width: 2.6 },
  },
  {
    selector: "edge.r-edge-removed",
    style: { "line-color": C.removed, "target-arrow-color": C.removed, "line-style": "dashed", width: 2.2 },
  },
  {
    selector: "node.step:selected",
    style: {
      "underlay-color": "#3457d5",
      "underlay-opacity": 0.22,
      "underlay-padding": 9,
      "underlay-shape": "round-rectangle",
    },
  },
  { selector: "node.reset-group:selected", style: { "border-width": 3.5 } },
];
