// A waiting version drawn against the last approved one: the diff page's graph
// (model/diff.js: added, removed and changed steps in their colours) in a small panel,
// drawn the first time a reviewer opens it. A first version is drawn as it is.
import { createViewer } from "../graph/viewer.js";
import { diffElements } from "../model/diff.js";
import { steps } from "../model/document.js";

const NO_CHANGES = {
  added_steps: [],
  removed_steps: [],
  changed_steps: [],
  added_edges: [],
  removed_edges: [],
  plan_changes: [],
};

export function drawDiffGraph(container, graph) {
  const from = graph.from || graph.to;
  const { cy, layout } = createViewer(container, {
    size: steps(graph.to).length + steps(from).length,
    filename: `plan-${graph.plan.id}-v${graph.baseline || graph.number}-v${graph.number}`,
  });
  const elements = diffElements(from, graph.to, graph.diff || NO_CHANGES);
  // `base` marks the plan's own elements, which the layout places (graph/layout.js).
  cy.add([...elements.nodes, ...elements.edges].map((e) => ({ ...e, data: { ...e.data, base: e.classes } })));
  return { cy, ready: layout() };
}
