// A plan document as Cytoscape element definitions. Pure: no DOM, no Cytoscape.
//
// A node's id is its step's id, so node identity survives edits, versions and diffs; a
// repeated id (a `duplicate_id` draft) gets `id#2`, `id#3`. An edge runs from a
// dependency to its dependent, `dep>step` (">" cannot appear in a step id). A dependency
// on a step that does not exist is drawn as a dangling edge from a ghost node
// `ghost:<id>`, and a deliverable that names no step as a ghost too, so the compiler's
// `missing_dependency` and `missing_deliverable` have something to paint. A step whose
// arguments take values from another step's output gets a data edge from it,
// `data:src>step`, labelled with the paths it takes (model/references.js); data edges
// play no part in the layout and cannot be selected (they are edited in the arguments).
import { dependsOn, effectiveDeliverable, steps } from "./document.js";
import { dataEdgeLabel, dataEdges, sourceText } from "./references.js";

export const GHOST = "ghost:";
// Characters on one line of a node's label: what fits its width (graph/style.js).
const LINE = 32;
const DESCRIPTION_LINES = 4;

export function edgeId(dep, stepId) {
  return `${dep}>${stepId}`;
}

export function dataEdgeId(source, stepId) {
  return `data:${source}>${stepId}`;
}

export function ghostId(stepId) {
  return `${GHOST}${stepId}`;
}

export function truncate(text, size = LINE) {
  const flat = String(text || "").replace(/\s+/g, " ").trim();
  return flat.length > size ? `${flat.slice(0, size - 1)}…` : flat;
}

export function toolLine(step) {
  if (step.tool) return `⚙ ${step.tool}`;
  const allowed = Array.isArray(step.tools_allowed) ? step.tools_allowed : [];
  return allowed.length ? `agent: ${allowed.join(", ")}` : "agent step";
}

// `text` in lines of at most `size` characters, broken between words (a longer word is
// split), at most `most` lines: past them the last line ends in "…".
export function wrap(text, size = LINE, most = 1) {
  const words = String(text || "").split(/\s+/).filter(Boolean);
  const lines = [];
  let line = "";
  for (let word of words) {
    while (word.length > size) {
      if (line) lines.push(line);
      lines.push(word.slice(0, size));
      word = word.slice(size);
      line = "";
    }
    if (!line) line = word;
    else if (line.length + 1 + word.length <= size) line += ` ${word}`;
    else {
      lines.push(line);
      line = word;
    }
  }
  if (line) lines.push(line);
  if (lines.length <= most) return lines.length ? lines : [""];
  const kept = lines.slice(0, most);
  kept[most - 1] = `${kept[most - 1].slice(0, size - 1)}…`;
  return kept;
}

// A step node's label, its line count (graph/style.js sizes the node by it) and its
// title (the whole text, shown as the graph's tooltip: graph/cy.js). The description
// wraps over up to DESCRIPTION_LINES lines rather than being cut at one line's width.
export function stepNodeData(step, isDeliverable) {
  const title = isDeliverable ? `★ ${step.id}` : String(step.id);
  const description = String(step.description || "").replace(/\s+/g, " ").trim();
  const lines = [
    ...wrap(title, LINE, 2),
    ...wrap(description || "—", LINE, DESCRIPTION_LINES),
    ...wrap(toolLine(step), LINE, 2),
  ];
  return {
    label: lines.join("\n"),
    lines: lines.length,
    title: [title, description || "no description", toolLine(step)].join("\n"),
  };
}

// {nodes: [...], edges: [...]}: each an element definition for cy.add().
export function toElements(doc) {
  const all = steps(doc);
  const deliverable = effectiveDeliverable(doc);
  const named = doc.deliverable || null;
  const seen = new Map();
  const nodes = [];
  const edges = [];
  const ghosts = new Map();
  const known = new Set(all.map((step) => step.id));
  for (const [index, step] of all.entries()) {
    const count = (seen.get(step.id) || 0) + 1;
    seen.set(step.id, count);
    const id = count === 1 ? step.id : `${step.id}#${count}`;
    const isDeliverable = count === 1 && step.id === deliverable;
    const classes = ["step", step.tool ? "tool-step" : "agent-step"];
    if (isDeliverable) classes.push("deliverable");
    if (count > 1) classes.push("duplicate");
    nodes.push({
      group: "nodes",
      data: {
        id,
        stepId: step.id,
        index,
        kind: "step",
        ...stepNodeData(step, isDeliverable),
        tool: step.tool || "",
        deliverable: isDeliverable,
      },
      classes: classes.join(" "),
    });
    if (count > 1) continue; // a repeated id's edges are the first step's
    for (const dep of new Set(dependsOn(step))) {
      let source = dep;
      const classes = ["dependency"];
      if (!known.has(dep)) {
        source = ghostId(dep);
        classes.push("dangling");
        if (!ghosts.has(dep)) ghosts.set(dep, "missing step");
      }
      if (dep === step.id) classes.push("loop");
      edges.push({
        group: "edges",
        data: { id: edgeId(dep, step.id), source, target: step.id, dep, step: step.id },
        classes: classes.join(" "),
      });
    }
  }
  for (const { source, target, refs } of dataEdges(all)) {
    edges.push({
      group: "edges",
      data: {
        id: dataEdgeId(source, target),
        source,
        target,
        kind: "data",
        label: truncate(dataEdgeLabel(refs), 24),
        takes: refs.map((ref) => `${ref.at} <- ${sourceText(ref)}`).join("\n"),
      },
      classes: "data-edge",
      selectable: false,
    });
  }
  if (named && !known.has(named) && !ghosts.has(named)) ghosts.set(named, "missing deliverable");
  for (const [stepId, why] of ghosts) {
    nodes.push({
      group: "nodes",
      data: {
        id: ghostId(stepId),
        stepId,
        kind: "ghost",
        label: `${truncate(stepId)}\n(${why})`,
        deliverable: false,
      },
      classes: why === "missing deliverable" ? "ghost ghost-deliverable" : "ghost",
    });
  }
  return { nodes, edges };
}

// The node id that stands for a step id named by a diagnostic: the step, else its ghost.
export function elementForStep(stepId, nodeIds) {
  if (nodeIds.has(stepId)) return stepId;
  const ghost = ghostId(stepId);
  return nodeIds.has(ghost) ? ghost : null;
}

// Structure only (ids, dependency ends): whether a layout is needed after an edit. Data
// edges are left out: the layout ignores them.
export function structureKey(elements) {
  const nodes = elements.nodes.map((node) => node.data.id).join("\u0001");
  const edges = elements.edges
    .filter((edge) => edge.data.kind !== "data")
    .map((edge) => `${edge.data.source}>${edge.data.target}`)
    .join("\u0001");
  return `${nodes}\u0002${edges}`;
}
