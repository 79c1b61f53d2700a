// Edge routes for the layered layout of large plans (model/layered.js), which places steps
// in rows but draws no edges. Pure. dagre routes the edges of small plans around the steps
// with dummy nodes; this does the same in one pass per edge:
//   - an edge that skips rows bends through a free gap of each row it passes (the gap
//     nearest its straight line), going straight down through the row's band, so it never
//     crosses a step;
//   - an edge leaves its source downwards (and enters its target from above) before it
//     turns, when a straight line would leave through the side of the source, across the
//     steps beside it.
// Steps of one row share its y (layered.js places them so) and have one width and height.

const MARGIN_X = 8; // px kept between an edge and the side of a step it passes
const MARGIN_Y = 8; // px above and below a row's band

// positions: Map(id -> {x, y}); edges: [{source, target}]; size: {width, height}.
// Returns Map(edgeKey(source, target) -> [{x, y}, ...]): the bends, source to target, of
// each edge that needs any.
export function routeRows(positions, edges, { width, height }, key) {
  const rows = buildRows(positions, width);
  const routes = new Map();
  for (const edge of edges) {
    const s = positions.get(edge.source);
    const t = positions.get(edge.target);
    if (!s || !t || edge.source === edge.target || s.y === t.y) continue;
    const down = t.y > s.y ? 1 : -1;
    const band = height / 2 + MARGIN_Y;
    const bends = [];
    for (const row of rowsBetween(rows, s.y, t.y)) {
      const along = s.x + ((t.x - s.x) * (row.y - s.y)) / (t.y - s.y);
      const x = freeX(row, along);
      bends.push({ x, y: row.y - down * band }, { x, y: row.y + down * band });
    }
    const first = bends.length ? bends[0] : t;
    if (leavesBySide(s, first, width, height)) bends.unshift({ x: s.x, y: s.y + down * band });
    const last = bends.length ? bends[bends.length - 1] : s;
    if (leavesBySide(t, last, width, height)) bends.push({ x: t.x, y: t.y - down * band });
    if (bends.length) routes.set(key(edge.source, edge.target), bends);
  }
  return routes;
}

// Rows sorted by y, each with the occupied x intervals sorted.
function buildRows(positions, width) {
  const byY = new Map();
  for (const { x, y } of positions.values()) {
    if (!byY.has(y)) byY.set(y, []);
    byY.get(y).push(x);
  }
  const half = width / 2 + MARGIN_X;
  return [...byY.entries()]
    .sort((a, b) => a[0] - b[0])
    .map(([y, xs]) => {
      xs.sort((a, b) => a - b);
      return { y, blocked: xs.map((x) => [x - half, x + half]) };
    });
}

// The rows strictly between y1 and y2 (either order), by binary search.
function rowsBetween(rows, y1, y2) {
  const low = Math.min(y1, y2);
  const high = Math.max(y1, y2);
  let lo = 0;
  let hi = rows.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (rows[mid].y <= low) lo = mid + 1;
    else hi = mid;
  }
  const out = [];
  for (let i = lo; i < rows.length && rows[i].y < high; i += 1) out.push(rows[i]);
  return y2 > y1 ? out : out.reverse();
}

// The x nearest `x` that lies in no step of the row (with margins).
function freeX(row, x) {
  const blocked = row.blocked;
  let lo = 0;
  let hi = blocked.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (blocked[mid][1] < x) lo = mid + 1;
    else hi = mid;
  }
  // blocked[lo] is the first interval ending at or after x; overlapping ones merge.
  if (lo >= blocked.length || blocked[lo][0] > x) return x;
  let left = blocked[lo][0];
  let right = blocked[lo][1];
  for (let i = lo - 1; i >= 0 && blocked[i][1] >= left; i -= 1) left = Math.min(left, blocked[i][0]);
  for (let i = lo + 1; i < blocked.length && blocked[i][0] <= right; i += 1) right = Math.max(right, blocked[i][1]);
  return x - left <= right - x ? left : right;
}

// Whether the straight line from the centre of a step at `c` towards `p` leaves the step
// through its side (and so runs along its row, across the steps beside it).
function leavesBySide(c, p, width, height) {
  const dx = Math.abs(p.x - c.x);
  const dy = Math.abs(p.y - c.y);
  return dx * (height / 2) > dy * (width / 2) * 0.9;
}
