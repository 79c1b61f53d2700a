// Lays out the replan graph with its reset subgraph kept together: dagre's compound
// layout, the group as a cluster, so the outline drawn around the reset steps holds
// only them. Edge routes become control points as graph/layout.js makes them. Above
// dagre's size limit the plan layout (graph/layout.js) is used as it is; the outline is
// then only the reset steps' bounding box.
import dagre from "../../../vendor/dagre/dagre.esm.js";
import { DAGRE_LIMIT, controlPoints, readableView, runLayout } from "../graph/layout.js";

const NODE_SEP = 36;
const RANK_SEP = 64;

export function layoutReplan(cy, groupId) {
  const steps = cy.nodes("[base]").filter((node) => node.id() !== groupId);
  if (steps.length > DAGRE_LIMIT || cy.getElementById(groupId).empty()) return runLayout(cy, { fit: true });
  const graph = new dagre.graphlib.Graph({ compound: true });
  graph.setGraph({ rankdir: "TB", nodesep: NODE_SEP, ranksep: RANK_SEP, edgesep: 16 });
  graph.setDefaultEdgeLabel(() => ({}));
  graph.setNode(groupId, {});
  steps.forEach((node) => {
    graph.setNode(node.id(), { width: node.width(), height: node.height() });
    if (node.data("parent") === groupId) graph.setParent(node.id(), groupId);
  });
  cy.edges("[base]").forEach((edge) => {
    if (edge.source().id() !== edge.target().id()) graph.setEdge(edge.source().id(), edge.target().id());
  });
  dagre.layout(graph);
  const positions = new Map();
  steps.forEach((node) => {
    const placed = graph.node(node.id());
    positions.set(node.id(), { x: placed.x, y: placed.y });
  });
  cy.batch(() => {
    cy.edges("[base]").forEach((edge) => {
      const source = edge.source().id();
      const target = edge.target().id();
      const route = graph.edge(source, target);
      const points = route && route.points && route.points.length > 2
        ? controlPoints(route.points, positions.get(source), positions.get(target))
        : null;
      if (points) edge.data({ cpd: points.distances, cpw: points.weights });
      else if (edge.data("cpd")) edge.removeData("cpd cpw");
    });
  });
  const layout = steps.layout({
    name: "preset",
    positions: (node) => positions.get(node.id()) || { x: 0, y: 0 },
    fit: true,
    padding: 48,
    animate: false,
  });
  const done = new Promise((resolve) => layout.one("layoutstop", resolve));
  layout.run();
  return done.then(() => readableView(cy));
}
