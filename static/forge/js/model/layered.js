// A fast layered layout for large plans: dependencies above dependents. Pure.
//
// dagre gives the best drawings but its cost grows steeply (measured in headless
// Chromium: about 0.3 s for 100 steps, several seconds for 1,000, a minute for 3,000;
// see bench/editor.py), so plans above a threshold use this instead. It is the classic
// Sugiyama scheme cut down to linear passes:
//   1. break cycles: edges that close a cycle in a depth-first search are ignored;
//   2. rank by longest path from the sources, then pull each source down next to its
//      nearest dependent (short edges);
//   3. order each rank by the barycentre of its neighbours, a few sweeps down and up,
//      starting from depth-first order (related steps start close);
//   4. place each rank with isotonic regression (pool adjacent violators): every node
//      as close as possible to the mean x of its neighbours, in order, never overlapping.
// No dummy nodes: model/routes.js then bends each long edge through the gaps of the rows
// it passes, so that no edge crosses a step.

export function layeredLayout(nodes, edges, options = {}) {
  const nodeSep = options.nodeSep ?? 40;
  const rankSep = options.rankSep ?? 70;
  const sweeps = options.sweeps ?? 4;
  const ids = nodes.map((node) => node.id);
  const index = new Map(ids.map((id, i) => [id, i]));
  const n = ids.length;
  const width = Math.max(1, ...nodes.map((node) => node.width || 1));
  const height = Math.max(1, ...nodes.map((node) => node.height || 1));
  const succ = Array.from({ length: n }, () => []);
  const pred = Array.from({ length: n }, () => []);
  for (const edge of edges) {
    const s = index.get(edge.source);
    const t = index.get(edge.target);
    if (s === undefined || t === undefined || s === t) continue;
    succ[s].push(t);
  }
  const { order: dfsOrder, back } = depthFirst(succ, n);
  for (let s = 0; s < n; s += 1) {
    succ[s] = succ[s].filter((t) => !back.has(s * n + t));
    for (const t of succ[s]) pred[t].push(s);
  }
  const rank = longestPathRanks(succ, pred, n);
  pullSourcesDown(rank, succ, pred, n);
  const layers = [];
  for (const v of dfsOrder) {
    (layers[rank[v]] ||= []).push(v);
  }
  const layerList = layers.filter(Boolean);
  const position = new Float64Array(n);
  const setPositions = () => {
    for (const layer of layerList) layer.forEach((v, i) => (position[v] = i));
  };
  setPositions();
  for (let sweep = 0; sweep < sweeps; sweep += 1) {
    const down = sweep % 2 === 0;
    const sequence = down ? layerList : [...layerList].reverse();
    for (const layer of sequence) {
      const neighbours = down ? pred : succ;
      const key = new Float64Array(n);
      for (const v of layer) {
        const list = neighbours[v];
        if (!list.length) key[v] = position[v];
        else {
          let sum = 0;
          for (const u of list) sum += position[u];
          key[v] = sum / list.length;
        }
      }
      layer.sort((a, b) => key[a] - key[b] || position[a] - position[b]);
      layer.forEach((v, i) => (position[v] = i));
    }
  }
  // Coordinates: x by isotonic regression toward neighbours, alternating directions.
  const gap = width + nodeSep;
  const x = new Float64Array(n);
  for (const layer of layerList) {
    const offset = ((layer.length - 1) * gap) / 2;
    layer.forEach((v, i) => (x[v] = i * gap - offset));
  }
  for (let pass = 0; pass < 4; pass += 1) {
    const down = pass % 2 === 0;
    const sequence = down ? layerList : [...layerList].reverse();
    for (const layer of sequence) {
      const neighbours = down ? pred : succ;
      const desired = layer.map((v) => {
        const list = neighbours[v];
        if (!list.length) return x[v];
        let sum = 0;
        for (const u of list) sum += x[u];
        return sum / list.length;
      });
      const placed = isotonic(desired.map((d, i) => d - i * gap));
      layer.forEach((v, i) => (x[v] = placed[i] + i * gap));
    }
  }
  const positions = new Map();
  layerList.forEach((layer, r) => {
    for (const v of layer) positions.set(ids[v], { x: x[v], y: r * (height + rankSep) });
  });
  return positions;
}

// Iterative depth-first search from every unvisited node in input order: the visit order
// and the edges that lead back onto the stack (those close cycles), as s * n + t.
function depthFirst(succ, n) {
  const state = new Uint8Array(n); // 0 new, 1 on stack, 2 done
  const order = [];
  const back = new Set();
  const next = new Uint32Array(n);
  for (let root = 0; root < n; root += 1) {
    if (state[root]) continue;
    const stack = [root];
    state[root] = 1;
    order.push(root);
    while (stack.length) {
      const v = stack[stack.length - 1];
      if (next[v] < succ[v].length) {
        const t = succ[v][next[v]];
        next[v] += 1;
        if (state[t] === 0) {
          state[t] = 1;
          order.push(t);
          stack.push(t);
        } else if (state[t] === 1) back.add(v * n + t);
      } else {
        state[v] = 2;
        stack.pop();
      }
    }
  }
  return { order, back };
}

function longestPathRanks(succ, pred, n) {
  const rank = new Int32Array(n);
  const waiting = new Int32Array(n);
  const queue = [];
  for (let v = 0; v < n; v += 1) {
    waiting[v] = pred[v].length;
    if (!waiting[v]) queue.push(v);
  }
  for (let head = 0; head < queue.length; head += 1) {
    const v = queue[head];
    for (const t of succ[v]) {
      if (rank[v] + 1 > rank[t]) rank[t] = rank[v] + 1;
      waiting[t] -= 1;
      if (!waiting[t]) queue.push(t);
    }
  }
  return rank;
}

function pullSourcesDown(rank, succ, pred, n) {
  for (let v = 0; v < n; v += 1) {
    if (pred[v].length || !succ[v].length) continue;
    let nearest = Infinity;
    for (const t of succ[v]) nearest = Math.min(nearest, rank[t]);
    rank[v] = Math.max(rank[v], nearest - 1);
  }
}

// Pool adjacent violators: the non-decreasing sequence closest (least squares) to `values`.
export function isotonic(values) {
  const means = [];
  const sizes = [];
  for (const value of values) {
    means.push(value);
    sizes.push(1);
    while (means.length > 1 && means[means.length - 2] > means[means.length - 1]) {
      const m2 = means.pop();
      const s2 = sizes.pop();
      const m1 = means.pop();
      const s1 = sizes.pop();
      means.push((m1 * s1 + m2 * s2) / (s1 + s2));
      sizes.push(s1 + s2);
    }
  }
  const out = [];
  means.forEach((mean, i) => {
    for (let k = 0; k < sizes[i]; k += 1) out.push(mean);
  });
  return out;
}
