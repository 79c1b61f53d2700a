// Compiler diagnostics as paint: which classes and badges each graph element gets. Pure.
//
// Errors paint red, warnings amber, infos blue; a node with several keeps the worst
// severity's colour (the stylesheet orders them). Per code:
//   cycle                    the cycle's nodes and edges ("cycle")
//   missing_dependency       the dangling edge and its ghost node, and the step
//   duplicate_id, unknown_tool, agent_without_tools, tool_unavailable,
//   unauthorized_tool, host_not_allowed, invalid_args, invalid_check
//                            a badge on the step naming the problem
//   nonterminal_deliverable  the deliverable ("bad-deliverable") and its outgoing edges;
//                            the steps that depend on it are only named
//   missing_deliverable      the ghost deliverable, or the terminal steps to choose from
//   unreachable_deliverable  the steps that lead nowhere ("unreachable")
//   invalid_reference        a "bad reference" badge on the step, and its data edge
//   approval_required        an "approval" badge
//   flattened_decision       a "decision flattened" badge on the decision, its edges to
//                            the branches (which all run) amber; the branches only named
// Any other code (one this table has not met yet) still paints its steps and edges in
// its severity's colour and the d-<code> class, without a badge.
// A diagnostic that names no element (a budget warning) is a plan-level problem only.
import { dataEdgeId, edgeId, elementForStep } from "./elements.js";

export const BADGES = {
  duplicate_id: "duplicate id",
  unknown_tool: "unknown tool",
  agent_without_tools: "choose tools",
  tool_unavailable: "server down",
  unauthorized_tool: "not allowed",
  host_not_allowed: "host refused",
  invalid_args: "invalid args",
  invalid_check: "invalid check",
  invalid_reference: "bad reference",
  repeats_side_effect: "repeats effect",
  approval_required: "approval",
  flattened_decision: "decision flattened",
};

const CODE_CLASSES = {
  cycle: "cycle",
  nonterminal_deliverable: "bad-deliverable",
  unreachable_deliverable: "unreachable",
  missing_dependency: "missing",
  missing_deliverable: "missing",
};

const RANK = { error: 0, warning: 1, info: 2 };
const FIRST_NODE_ONLY = new Set(["nonterminal_deliverable", "flattened_decision"]);

// Diagnostics about the source text a version was imported from, not about its document
// (forge.plan.formats: a Mermaid decision whose branches all run). Compiling the document
// cannot find them again, so the editor keeps them beside each compile's answer while it
// is on that version (keep in step with the warnings forge.plan.import_plan gives).
export const IMPORT_CODES = new Set(["flattened_decision"]);

// `diagnostics` (a compile's answer) with the import `notes` whose first step is still in
// the document (`stepIds`), placed after the warnings and before the infos.
export function withImportNotes(diagnostics, notes, stepIds) {
  const ids = new Set(stepIds);
  const kept = (notes || []).filter((note) => (note.nodes || []).length && ids.has(note.nodes[0]));
  if (!kept.length) return diagnostics;
  const infos = diagnostics.filter((d) => d.severity === "info");
  return [...diagnostics.filter((d) => d.severity !== "info"), ...kept, ...infos];
}

// nodeIds, edgeIds: Sets of the element ids in the graph.
// Returns {nodes: Map(id -> {classes:Set, badges:[{text, severity}]}), edges: Map(id ->
// Set), located: [diagnostic index -> element ids]}.
export function paint(diagnostics, nodeIds, edgeIds) {
  const nodes = new Map();
  const edges = new Map();
  const located = [];
  const nodeEntry = (id) => {
    if (!nodes.has(id)) nodes.set(id, { classes: new Set(), badges: [], worst: null });
    return nodes.get(id);
  };
  const edgeEntry = (id) => {
    if (!edges.has(id)) edges.set(id, new Set());
    return edges.get(id);
  };
  for (const diagnostic of diagnostics) {
    const severity = diagnostic.severity in RANK ? diagnostic.severity : "error";
    const extra = CODE_CLASSES[diagnostic.code];
    const ids = [];
    for (const [position, stepId] of (diagnostic.nodes || []).entries()) {
      const id = elementForStep(stepId, nodeIds);
      if (id === null) continue;
      ids.push(id);
      const entry = nodeEntry(id);
      entry.classes.add(`d-${diagnostic.code}`);
      // The steps that depend on a nonterminal deliverable are named, not at fault: the
      // deliverable and the edges to them carry the colour.
      if (position > 0 && FIRST_NODE_ONLY.has(diagnostic.code)) continue;
      if (extra) entry.classes.add(extra);
      if (entry.worst === null || RANK[severity] < RANK[entry.worst]) entry.worst = severity;
      const badge = BADGES[diagnostic.code];
      if (badge && !entry.badges.some((item) => item.text === badge)) {
        entry.badges.push({ text: badge, severity });
      }
    }
    for (const [dep, stepId] of diagnostic.edges || []) {
      // A wrong reference's edge is the data edge it draws; every other code's, the
      // dependency.
      const id = diagnostic.code === "invalid_reference" ? dataEdgeId(dep, stepId) : edgeId(dep, stepId);
      if (!edgeIds.has(id)) continue;
      ids.push(id);
      const classes = edgeEntry(id);
      classes.add(severity);
      classes.add(`d-${diagnostic.code}`);
      if (extra) classes.add(extra);
    }
    located.push(ids);
  }
  for (const entry of nodes.values()) {
    if (entry.worst) entry.classes.add(entry.worst);
    entry.badges.sort((a, b) => RANK[a.severity] - RANK[b.severity]);
  }
  return { nodes, edges, located };
}

export function counts(diagnostics) {
  const out = { error: 0, warning: 0, info: 0 };
  for (const diagnostic of diagnostics) {
    if (diagnostic.severity in out) out[diagnostic.severity] += 1;
  }
  return out;
}
