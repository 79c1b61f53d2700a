// Brings a Cytoscape graph in line with a plan: elements from model/elements.js, paint
// from model/paint.js. Only what differs is touched, in one batch, so an edit to one
// step of a 3,000-step plan costs one element's update, not a redraw of everything.
import { badgeImage } from "../model/badges.js";
import { structureKey, toElements } from "../model/elements.js";
import { paint } from "../model/paint.js";
import { NODE_WIDTH } from "./style.js";

// Replaces the graph's elements with the document's; returns whether the structure
// (nodes or edge ends) changed, i.e. whether a new layout is needed.
export function syncElements(cy, doc) {
  const elements = toElements(doc);
  const before = cy.scratch("_forgeStructure");
  const after = structureKey(elements);
  const wanted = new Map();
  for (const element of [...elements.nodes, ...elements.edges]) wanted.set(element.data.id, element);
  cy.batch(() => {
    cy.elements().forEach((element) => {
      if (element.data("base") === undefined) return; // not ours: edgehandles' preview
      const want = wanted.get(element.id());
      const stale =
        !want ||
        (element.isEdge() &&
          (element.data("source") !== want.data.source || element.data("target") !== want.data.target));
      if (stale) cy.remove(element);
    });
    const addedNodes = [];
    const addedEdges = [];
    for (const [id, want] of wanted) {
      const existing = cy.getElementById(id);
      if (existing.empty() || existing.removed()) {
        const element = { ...want, data: { ...want.data, base: want.classes }, classes: want.classes };
        (want.group === "nodes" ? addedNodes : addedEdges).push(element);
        continue;
      }
      for (const [key, value] of Object.entries(want.data)) {
        if (existing.data(key) !== value) existing.data(key, value);
      }
      if (existing.data("base") !== want.classes) {
        existing.data("base", want.classes);
        existing.removeData("_classes"); // repainted by applyDiagnostics
        existing.classes(want.classes);
      }
    }
    // Nodes first, so that new edges find their ends.
    if (addedNodes.length || addedEdges.length) cy.add([...addedNodes, ...addedEdges]);
  });
  cy.scratch("_forgeStructure", after);
  return before !== after;
}

// Paints diagnostics on the graph; returns, per diagnostic, the ids of its elements.
// `extraBadges` (Map node id -> [{text, severity}]) adds badges of other kinds, such as
// the editor's open review threads, after the compiler's; such a node also carries
// data("threads"), the number given.
export function applyDiagnostics(cy, diagnostics, extraBadges = new Map()) {
  const nodeIds = new Set(cy.nodes().map((node) => node.id()));
  const edgeIds = new Set(cy.edges().map((edge) => edge.id()));
  const painted = paint(diagnostics, nodeIds, edgeIds);
  cy.batch(() => {
    cy.elements().forEach((element) => {
      const base = element.data("base");
      if (base === undefined) return;
      let extra = "";
      if (element.isNode()) {
        const entry = painted.nodes.get(element.id());
        extra = entry ? [...entry.classes].join(" ") : "";
        const more = extraBadges.get(element.id()) || [];
        const badges = [...(entry ? entry.badges : []), ...more];
        const image = badges.length ? badgeImage(badges, NODE_WIDTH) : null;
        const threads = more.length ? more[0].count : undefined;
        if (element.data("threads") !== threads) {
          if (threads) element.data("threads", threads);
          else element.removeData("threads");
        }
        const url = image ? image.url : undefined;
        if (element.data("badgeUrl") !== url) {
          if (url) element.data("badgeUrl", url);
          else element.removeData("badgeUrl");
        }
      } else {
        const classes = painted.edges.get(element.id());
        extra = classes ? [...classes].join(" ") : "";
      }
      const wanted = extra ? `${base} ${extra}` : base;
      if (element.data("_classes") !== wanted) {
        element.data("_classes", wanted);
        element.classes(wanted);
      }
    });
  });
  return painted.located;
}
