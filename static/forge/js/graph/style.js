// The Cytoscape stylesheet, as data. The wiring (graph/cy.js) only hands it over.
// Colours: steps white on grey borders; the deliverable in the accent blue; errors red,
// warnings amber, infos blue; in diffs added green, removed red and dashed, changed
// violet. editor.css uses the same colours for the legend and the problems panel.

export const COLOURS = {
  ink: "#1d2330",
  muted: "#5b6475",
  border: "#b9c0cc",
  edge: "#98a2b3",
  accent: "#3457d5",
  error: "#d92d20",
  errorBg: "#fef3f2",
  warning: "#dc6803",
  warningBg: "#fffaeb",
  info: "#1570ef",
  added: "#039855",
  addedBg: "#ecfdf3",
  removed: "#d92d20",
  changed: "#7a5af8",
  changedBg: "#f4f3ff",
};

export const NODE_WIDTH = 220;
export const NODE_HEIGHT = 66;
// One line of a node's label (font-size 11.5 x line-height 1.35), and the padding around.
const LABEL_LINE = 15.5;
const LABEL_PADDING = 20;

// A step node's height for its label's line count (data "lines", model/elements.js: a
// long description wraps instead of being cut), plus `extra` lines a page adds.
export function heightForLines(extra = 0) {
  const height = (lines) => LABEL_PADDING + (lines + extra) * LABEL_LINE;
  return `mapData(lines, 1, 10, ${height(1)}, ${height(10)})`;
}

export const STYLE = [
  {
    selector: "node",
    style: {
      shape: "round-rectangle",
      width: NODE_WIDTH,
      height: NODE_HEIGHT,
      "background-color": "#ffffff",
      "border-width": 1.5,
      "border-color": COLOURS.border,
      label: "data(label)",
      color: COLOURS.ink,
      "font-family": "system-ui, sans-serif",
      "font-size": 11.5,
      "text-wrap": "wrap",
      "text-max-width": NODE_WIDTH - 16,
      "text-valign": "center",
      "text-halign": "center",
      "line-height": 1.35,
      "min-zoomed-font-size": 6,
    },
  },
  { selector: "node[lines]", style: { height: heightForLines() } },
  { selector: "node.agent-step", style: { "background-color": "#f8f9fc" } },
  {
    selector: "node.deliverable",
    style: { "border-width": 3, "border-color": COLOURS.accent, "background-color": "#eef2ff" },
  },
  {
    selector: "node[badgeUrl]",
    style: {
      "background-image": "data(badgeUrl)",
      "background-width": NODE_WIDTH,
      "background-height": 16,
      "background-position-x": 0,
      "background-position-y": -9,
      "background-clip": "none",
      "background-image-containment": "over",
      "bounds-expansion": 10,
      "background-fit": "none",
    },
  },
  // Diagnostics: the worst severity wins, so error comes last.
  { selector: "node.info", style: { "border-color": COLOURS.info } },
  {
    selector: "node.warning",
    style: { "border-color": COLOURS.warning, "border-width": 2, "background-color": COLOURS.warningBg },
  },
  { selector: "node.unreachable", style: { "border-style": "dashed" } },
  {
    selector: "node.error",
    style: { "border-color": COLOURS.error, "border-width": 2.5, "background-color": COLOURS.errorBg },
  },
  { selector: "node.cycle", style: { "border-width": 3.5 } },
  {
    selector: "node.bad-deliverable",
    style: { "border-style": "double", "border-width": 6, "border-color": COLOURS.error },
  },
  // A missing step (a dependency or deliverable that names no step) is no step at all: a
  // hollow grey dashed outline with its name in italics, whatever the diagnostics paint on
  // it (so after them). A real step with an error is filled and outlined in red.
  {
    selector: "node.ghost",
    style: {
      "background-opacity": 0,
      "border-style": "dashed",
      "border-width": 2,
      "border-color": COLOURS.muted,
      color: COLOURS.muted,
      "font-style": "italic",
      width: NODE_WIDTH - 40,
      height: NODE_HEIGHT - 20,
    },
  },
  {
    selector: "edge",
    style: {
      width: 1.6,
      "line-color": COLOURS.edge,
      "target-arrow-color": COLOURS.edge,
      "target-arrow-shape": "triangle",
      "arrow-scale": 0.9,
      "curve-style": "bezier",
      "control-point-step-size": 28,
    },
  },
  {
    selector: "edge[cpd]",
    style: {
      "curve-style": "unbundled-bezier",
      "control-point-distances": "data(cpd)",
      "control-point-weights": "data(cpw)",
      "edge-distances": "intersection",
    },
  },
  // A large plan's routes (model/routes.js): straight segments through the gaps between
  // steps, so that no edge crosses one.
  {
    selector: "edge[segd]",
    style: {
      "curve-style": "segments",
      "segment-distances": "data(segd)",
      "segment-weights": "data(segw)",
      "edge-distances": "node-position",
    },
  },
  // Data between steps: dashed, in the changed-violet, labelled with the paths it takes,
  // bowed to the right of the dependencies (graph/layout.js bows one that skips layers
  // wide enough to pass beside the steps between its ends, and any whose default bow
  // would put a control point inside a step, where Cytoscape would not draw it:
  // model/bows.js).
  {
    selector: "edge.data-edge",
    style: {
      "curve-style": "unbundled-bezier",
      "control-point-distances": [-50, -50],
      "control-point-weights": [0.25, 0.75],
      "line-style": "dashed",
      "line-dash-pattern": [6, 4],
      width: 1.4,
      "line-color": COLOURS.changed,
      "target-arrow-color": COLOURS.changed,
      "target-arrow-shape": "vee",
      label: "data(label)",
      "font-size": 10,
      color: COLOURS.changed,
      "text-background-color": "#ffffff",
      "text-background-opacity": 0.9,
      "text-background-padding": 2,
      "text-rotation": "none",
      "min-zoomed-font-size": 7,
      "z-index": 5,
    },
  },
  { selector: "edge.loop", style: { "loop-direction": "45deg", "loop-sweep": "-60deg" } },
  { selector: "edge.dangling", style: { "line-style": "dashed" } },
  {
    selector: "edge.warning",
    style: { "line-color": COLOURS.warning, "target-arrow-color": COLOURS.warning, width: 2.2 },
  },
  {
    selector: "edge.error",
    style: {
      "line-color": COLOURS.error,
      "target-arrow-color": COLOURS.error,
      width: 3,
      "z-index": 10,
    },
  },
  { selector: "edge.data-edge.error", style: { color: COLOURS.error, width: 2.2 } },
  {
    selector: "edge.data-edge[bow]",
    style: { "control-point-distances": "data(bow)", "control-point-weights": "data(boww)" },
  },
  // Diffs.
  {
    selector: "node.added",
    style: { "border-color": COLOURS.added, "border-width": 3, "background-color": COLOURS.addedBg },
  },
  {
    selector: "node.changed",
    style: { "border-color": COLOURS.changed, "border-width": 3, "background-color": COLOURS.changedBg },
  },
  {
    selector: "node.removed",
    style: {
      "border-color": COLOURS.removed,
      "border-style": "dashed",
      "border-width": 2.5,
      "background-color": COLOURS.errorBg,
      opacity: 0.7,
    },
  },
  {
    selector: "edge.added",
    style: { "line-color": COLOURS.added, "target-arrow-color": COLOURS.added, width: 3 },
  },
  {
    selector: "edge.removed",
    style: {
      "line-color": COLOURS.removed,
      "target-arrow-color": COLOURS.removed,
      "line-style": "dashed",
      width: 2.5,
      opacity: 0.75,
    },
  },
  // Selection and focus.
  {
    selector: "node:selected",
    style: {
      "underlay-color": COLOURS.accent,
      "underlay-opacity": 0.18,
      "underlay-padding": 7,
      "underlay-shape": "round-rectangle",
    },
  },
  {
    selector: "edge:selected",
    style: {
      "line-color": COLOURS.accent,
      "target-arrow-color": COLOURS.accent,
      width: 3.5,
      "underlay-color": COLOURS.accent,
      "underlay-opacity": 0.15,
      "underlay-padding": 5,
    },
  },
  { selector: ".faded", style: { opacity: 0.25 } },
  // Drawing a dependency with edgehandles.
  {
    selector: ".eh-hover, .eh-target",
    style: { "border-color": COLOURS.accent, "border-width": 3 },
  },
  {
    selector: ".eh-source",
    style: { "border-color": COLOURS.accent, "border-width": 3 },
  },
  {
    selector: ".eh-preview, .eh-ghost-edge",
    style: {
      "line-color": COLOURS.accent,
      "target-arrow-color": COLOURS.accent,
      "line-style": "dashed",
      width: 2.5,
    },
  },
  {
    selector: ".eh-ghost-node",
    style: { width: 1, height: 1, opacity: 0, label: "" },
  },
  { selector: ".eh-ghost-edge.eh-preview-active", style: { opacity: 0 } },
  // Milestones (graph/milestones.js): a band behind each one's steps, titled at its top.
  {
    selector: "node.milestone-band",
    style: {
      shape: "round-rectangle",
      width: "data(w)",
      height: "data(h)",
      "background-color": "#eef2fb",
      "background-opacity": 0.55,
      "border-width": 1,
      "border-style": "dashed",
      "border-color": "#9aa8c7",
      label: "data(label)",
      "text-valign": "top",
      "text-halign": "center",
      "text-margin-y": 17,
      "text-wrap": "none",
      "font-size": 11,
      "font-weight": 600,
      color: "#4a5775",
      "z-index-compare": "manual",
      "z-index": 0,
      events: "no",
    },
  },
  { selector: "node.milestone-band.review", style: { "border-color": "#b7791f", "border-width": 1.5 } },
];

// Above this many nodes the graph is drawn for speed: straight edges, and labels only
// once they are big enough to read.
export const LARGE_GRAPH = 400;

export const LARGE_STYLE = [
  { selector: "node", style: { "min-zoomed-font-size": 9 } },
  { selector: "edge", style: { "curve-style": "straight", "arrow-scale": 0.7 } },
  { selector: "edge[segd]", style: { "curve-style": "segments" } },
];
