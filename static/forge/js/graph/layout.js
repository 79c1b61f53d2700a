// Lays the graph out in layers, dependencies above dependents, and moves the nodes there.
// dagre (dummy nodes, fewer crossings, edges routed around nodes) for plans up to
// DAGRE_LIMIT nodes; above that the linear-time layered layout of model/layered.js,
// because dagre's time grows too steeply to keep a large plan interactive (numbers in
// bench/editor.py's output). dagre's edge routes are kept as control points relative to
// each edge's straight line (the way cytoscape-dagre does it), so an edge that skips a
// layer or closes a cycle bends around the steps in its way instead of crossing them.
import dagre from "../../../vendor/dagre/dagre.esm.js";
import { dataBow } from "../model/bows.js";
import { layeredLayout } from "../model/layered.js";
import { routeRows } from "../model/routes.js";

export const DAGRE_LIMIT = 150;
const NODE_SEP = 36;
const RANK_SEP = 64;
const STRAIGHT = 6; // px: a route closer than this to the straight line is drawn straight

// {positions: Map(id -> {x, y}), routes: Map(edgeKey -> [{x, y}, ...])}
// Above DAGRE_LIMIT, model/routes.js routes the edges through the gaps of each row, so that
// none crosses a step; those routes are drawn as straight segments (`segments`).
export function computeLayout(nodes, edges) {
  if (nodes.length <= DAGRE_LIMIT) return { ...dagreLayout(nodes, edges), kind: "curves" };
  const positions = layeredLayout(nodes, edges, { nodeSep: NODE_SEP, rankSep: RANK_SEP });
  const size = {
    width: Math.max(1, ...nodes.map((node) => node.width || 1)),
    height: Math.max(1, ...nodes.map((node) => node.height || 1)),
  };
  return { positions, routes: routeRows(positions, edges, size, edgeKey), kind: "segments" };
}

export function edgeKey(source, target) {
  return `${source}\u0000${target}`;
}

function dagreLayout(nodes, edges) {
  const graph = new dagre.graphlib.Graph();
  graph.setGraph({ rankdir: "TB", nodesep: NODE_SEP, ranksep: RANK_SEP, edgesep: 16 });
  graph.setDefaultEdgeLabel(() => ({}));
  for (const node of nodes) graph.setNode(node.id, { width: node.width, height: node.height });
  for (const edge of edges) {
    if (edge.source !== edge.target) graph.setEdge(edge.source, edge.target);
  }
  dagre.layout(graph);
  const positions = new Map();
  for (const node of nodes) {
    const placed = graph.node(node.id);
    positions.set(node.id, { x: placed.x, y: placed.y });
  }
  const routes = new Map();
  for (const edge of graph.edges()) {
    const route = graph.edge(edge);
    if (route && route.points && route.points.length > 2) routes.set(edgeKey(edge.v, edge.w), route.points);
  }
  return { positions, routes };
}

// A dagre route as Cytoscape's unbundled-bezier control points: for each inner point,
// its distance from the straight source-target line and its weight along it.
export function controlPoints(points, source, target) {
  const dx = target.x - source.x;
  const dy = target.y - source.y;
  const length = Math.hypot(dx, dy) || 1;
  const dir = { x: dx / length, y: dy / length };
  const normal = { x: -dir.y, y: dir.x };
  const inner = points.slice(1, -1).map((p) => {
    const vx = p.x - source.x;
    const vy = p.y - source.y;
    return { weight: (vx * dir.x + vy * dir.y) / length, distance: vx * normal.x + vy * normal.y };
  });
  if (!inner.length || inner.every((c) => Math.abs(c.distance) < STRAIGHT)) return null;
  return {
    distances: inner.map((c) => Number(c.distance.toFixed(1))),
    weights: inner.map((c) => Math.min(0.99, Math.max(0.01, Number(c.weight.toFixed(3))))),
  };
}

// A route as Cytoscape's segment points (straight lines through each point), relative to
// the line between the node centres (the stylesheet's edge-distances: node-position).
export function segmentPoints(points, source, target) {
  const dx = target.x - source.x;
  const dy = target.y - source.y;
  const length = Math.hypot(dx, dy) || 1;
  const dir = { x: dx / length, y: dy / length };
  const normal = { x: -dir.y, y: dir.x };
  const inner = points.map((p) => {
    const vx = p.x - source.x;
    const vy = p.y - source.y;
    return { weight: (vx * dir.x + vy * dir.y) / length, distance: vx * normal.x + vy * normal.y };
  });
  return {
    distances: inner.map((c) => Number(c.distance.toFixed(1))),
    weights: inner.map((c) => Number(c.weight.toFixed(4))),
  };
}

// The positions of the steps placed by hand, keyed by node id, for the store's layout.
export function placedPositions(cy) {
  const out = {};
  cy.nodes("[base][kind = 'step']").forEach((node) => {
    const p = node.position();
    out[node.id()] = [Number(p.x.toFixed(1)), Number(p.y.toFixed(1))];
  });
  return out;
}

// Steps placed by hand keep their place; one that has none (added since) goes below a
// placed step it depends on, else where the automatic layout puts it.
function applyPinned(cy, positions, pinned) {
  const height = Math.max(NODE_HEIGHT_FALLBACK, ...cy.nodes("[base]").map((node) => node.height()));
  const placed = new Map();
  for (const [id, point] of Object.entries(pinned)) {
    if (positions.has(id)) placed.set(id, { x: point[0], y: point[1] });
  }
  const taken = new Set([...placed.values()].map((p) => `${Math.round(p.x)},${Math.round(p.y)}`));
  cy.nodes("[base]").forEach((node) => {
    if (placed.has(node.id())) return;
    const anchor = node
      .incomers("node")
      .map((dep) => placed.get(dep.id()))
      .find(Boolean);
    let point = anchor ? { x: anchor.x, y: anchor.y + height + RANK_SEP } : positions.get(node.id());
    while (taken.has(`${Math.round(point.x)},${Math.round(point.y)}`)) point = { x: point.x + NODE_SEP * 2, y: point.y };
    taken.add(`${Math.round(point.x)},${Math.round(point.y)}`);
    placed.set(node.id(), point);
  });
  return placed;
}

const NODE_HEIGHT_FALLBACK = 40;

// The data edges of `nodes` bowed again where the nodes are now (after a drag).
export function rebowDataEdges(nodes) {
  nodes.connectedEdges("[base][kind = 'data']").forEach((edge) => bowDataEdge(edge, (node) => node.position()));
}

// A data edge's bow (model/bows.js) for its ends placed where `at(node)` says.
function bowDataEdge(edge, at) {
  const [source, target] = [edge.source(), edge.target()].map((node) => {
    const point = at(node);
    return point ? { x: point.x, y: point.y, w: node.outerWidth(), h: node.outerHeight() } : null;
  });
  const skipsLayers = Boolean(source && target) && Math.abs(target.y - source.y) / (RANK_SEP + 66) >= 1.5;
  const bow = source && target ? dataBow(source, target, { skipsLayers }) : null;
  if (bow) edge.data({ bow: bow.distances, boww: bow.weights });
  else if (edge.data("bow")) edge.removeData("bow boww");
}

// Lays out `cy` and resolves when the nodes have moved. `pinned` ({nodeId: [x, y]}, the
// store's layout) keeps the steps placed by hand where they are.
export function runLayout(cy, { animate = false, fit = true, padding = 48, pinned = null } = {}) {
  // Only the plan's own elements: not edgehandles' temporary preview. Dependencies alone
  // set the layers: data edges (model/elements.js) follow them and bow aside.
  const nodes = cy.nodes("[base]").map((node) => ({ id: node.id(), width: node.width(), height: node.height() }));
  const dependencies = cy.edges("[base]").filter((edge) => edge.data("kind") !== "data");
  const edges = dependencies.map((edge) => ({ source: edge.source().id(), target: edge.target().id() }));
  const computed = computeLayout(nodes, edges);
  const byHand = Boolean(pinned && Object.keys(pinned).length);
  const positions = byHand ? applyPinned(cy, computed.positions, pinned) : computed.positions;
  // Routes fit the automatic layout only: steps placed by hand get plain curves.
  const routes = byHand ? new Map() : computed.routes;
  cy.batch(() => {
    dependencies.forEach((edge) => {
      const source = edge.source().id();
      const target = edge.target().id();
      const route = routes.get(edgeKey(source, target));
      const from = positions.get(source);
      const to = positions.get(target);
      // Data, not a class: painting diagnostics resets classes.
      const points = route && computed.kind === "curves" ? controlPoints(route, from, to) : null;
      if (points) edge.data({ cpd: points.distances, cpw: points.weights });
      else if (edge.data("cpd")) edge.removeData("cpd cpw");
      const segments = route && computed.kind === "segments" ? segmentPoints(route, from, to) : null;
      if (segments) edge.data({ segd: segments.distances, segw: segments.weights });
      else if (edge.data("segd")) edge.removeData("segd segw");
    });
    cy.edges("[base][kind = 'data']").forEach((edge) => bowDataEdge(edge, (node) => positions.get(node.id())));
  });
  const layout = cy.nodes("[base]").layout({
    name: "preset",
    positions: (node) => positions.get(node.id()) || { x: 0, y: 0 },
    fit,
    padding,
    animate: animate && nodes.length <= 200,
    animationDuration: 220,
  });
  const done = new Promise((resolve) => layout.one("layoutstop", resolve));
  layout.run();
  return done.then(() => {
    if (fit) readableView(cy);
  });
}

// After a fit: a few steps would be blown up, and a big plan shrunk past reading. Cap the
// zoom at 1.1; below READABLE, show the top of the plan (where it starts) at a size one can
// read, and leave the whole to the overview and the Fit button.
const READABLE = 0.45;

export function readableView(cy) {
  const zoom = cy.zoom();
  if (zoom > 1.1) {
    cy.zoom(1.1);
    cy.center();
  } else if (zoom < READABLE) {
    const nodes = cy.nodes("[base]");
    let topY = Infinity;
    nodes.forEach((node) => (topY = Math.min(topY, node.position("y"))));
    const row = nodes.filter((node) => node.position("y") <= topY + 1);
    const xs = row.map((node) => node.position("x"));
    const centreX = (Math.min(...xs) + Math.max(...xs)) / 2;
    const level = 0.7;
    cy.zoom(level);
    cy.pan({ x: cy.width() / 2 - centreX * level, y: 90 - topY * level });
  }
}
