// How a data edge bows beside the dependencies. Pure.
//
// Cytoscape draws no edge whose control point lies inside a node it joins: the edge's
// endpoint on that node cannot be found, and the edge silently disappears (a diagonal
// edge between adjacent layers, bowed by the stylesheet's default, did). So the bow is
// chosen among a few, in order, as the first whose points all lie outside both steps.
// Points are reckoned as the stylesheet's "edge-distances: intersection" places them:
// along the line between the two steps' borders, offset to its right by each distance.

const MARGIN = 4; // a point this close to a step counts as inside it
const DEFAULT = { distances: [-50, -50], weights: [0.25, 0.75] }; // graph/style.js's

// The bow of a data edge from `source` to `target` (boxes {x, y, w, h}: centres and
// outer sizes, in model units): {distances, weights}, or null for the stylesheet's own
// when its points are outside both steps. `skipsLayers`: the edge passes steps in between
// (graph/layout.js), so it bows wide enough to go beside them.
export function dataBow(source, target, { skipsLayers = false } = {}) {
  const wide = -(Math.max(source.w, target.w) / 2 + 40) / 0.75; // a half width and a margin, at the curve's reach
  const candidates = [
    skipsLayers ? { distances: [wide, wide], weights: [0.25, 0.75] } : null,
    DEFAULT,
    ...[-30, 30, -15, 15].map((distance) => ({ distances: [distance], weights: [0.5] })),
    { distances: [0], weights: [0.5] }, // along the line between the borders: always outside
  ].filter(Boolean);
  const chosen = candidates.find((bow) => bowPoints(source, target, bow).every((p) => !inside(p, source) && !inside(p, target)));
  if (!chosen || chosen === DEFAULT) return null;
  return { distances: chosen.distances.map((d) => Number(d.toFixed(1))), weights: chosen.weights };
}

// Where a bow's control points fall: along the segment between where the line of the
// two centres leaves each box, offset by each distance to its right (Cytoscape's sign).
export function bowPoints(source, target, { distances, weights }) {
  const from = borderPoint(source, target);
  const to = borderPoint(target, source);
  const dx = to.x - from.x;
  const dy = to.y - from.y;
  const length = Math.hypot(dx, dy) || 1;
  const normal = { x: -dy / length, y: dx / length };
  return weights.map((weight, index) => ({
    x: from.x + weight * dx + distances[index] * normal.x,
    y: from.y + weight * dy + distances[index] * normal.y,
  }));
}

function borderPoint(box, toward) {
  const dx = toward.x - box.x;
  const dy = toward.y - box.y;
  const scale = Math.min(dx ? box.w / 2 / Math.abs(dx) : Infinity, dy ? box.h / 2 / Math.abs(dy) : Infinity);
  return Number.isFinite(scale) ? { x: box.x + dx * scale, y: box.y + dy * scale } : { x: box.x, y: box.y };
}

function inside(point, box) {
  return Math.abs(point.x - box.x) < box.w / 2 + MARGIN && Math.abs(point.y - box.y) < box.h / 2 + MARGIN;
}
