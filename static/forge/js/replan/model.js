// A replan as one graph. Pure: no DOM, no Cytoscape. The union of the two versions'
// steps (model/diff.js puts the removed ones back), each step given its fate in the
// replan, and the reset subgraph (the failed step and its descendants, in the version
// that failed) as one compound node around its steps:
//
//   failed   the step whose failure or broken contract stopped the run
//   kept     succeeded, unchanged and depending only on kept steps: its result was kept
//            and it never ran again (for a replan still waiting: would be kept if
//            unchanged in the new version)
//   added    new in the new version; removed: only in the old one; changed: in both,
//            with different fields
//   rerun    in the new version and not kept: runs again
//   waiting  (a replan still waiting) outside the reset set and not finished
//
// A step has one fate (its colour); its label's last line also says what else is true
// ("✕ failed in v1 · changed in v2").
import { diffElements } from "../model/diff.js";
import { findStep } from "../model/document.js";
import { stepNodeData } from "../model/elements.js";

export const GROUP_ID = "replan:reset";
export const NO_CHANGES = {
  added_steps: [],
  removed_steps: [],
  changed_steps: [],
  added_edges: [],
  removed_edges: [],
  plan_changes: [],
};
export const FATES = ["failed", "kept", "added", "removed", "changed", "rerun", "waiting"];

const STATUS_WORDS = {
  pending: "not run yet",
  ready: "ready",
  awaiting_approval: "awaiting approval",
  running: "running",
  succeeded: "succeeded",
  failed: "failed",
  invalid: "broke its contract",
  reset: "reset",
  needs_reconciliation: "needs reconciliation",
  skipped: "skipped",
  cancelled: "cancelled",
};

export function statusWords(status) {
  return STATUS_WORDS[status] || status || "—";
}

// Each step's fate in `replan` ({from, to, failure, reset, candidates, resume, diff}),
// as Map(id -> {fate, line, inOld, inNew, changes, reset}).
export function stepFates(replan, oldDoc, newDoc, statuses = {}) {
  const resumed = Boolean(replan.resume && newDoc);
  const diff = (resumed && replan.diff) || NO_CHANGES;
  const added = new Set(diff.added_steps);
  const removed = new Set(diff.removed_steps);
  const changed = new Map(diff.changed_steps.map((item) => [item.id, item.changes]));
  const reset = new Set(replan.reset);
  const kept = new Set(resumed ? replan.resume.preserved : replan.candidates);
  const failed = replan.failure.step;
  const oldIds = (oldDoc.steps || []).map((step) => step.id);
  const newIds = resumed ? (newDoc.steps || []).map((step) => step.id) : [];
  const ids = [...new Set([...oldIds, ...newIds])];
  const before = statuses[String(replan.from)] || {};
  const fates = new Map();
  for (const id of ids) {
    const notes = [];
    let fate;
    if (id === failed) {
      fate = "failed";
      notes.push(`✕ ${replan.failure.verb || "failed"} in v${replan.from}`);
      if (removed.has(id)) notes.push(`removed in v${replan.to}`);
      else if (changed.has(id)) notes.push(`${fieldNames(changed.get(id))} changed`);
    } else if (removed.has(id)) {
      fate = "removed";
      notes.push(`− removed in v${replan.to}`);
    } else if (added.has(id)) {
      fate = "added";
      notes.push(`+ added in v${replan.to}`);
    } else if (kept.has(id)) {
      fate = "kept";
      notes.push(resumed ? "✓ kept its result" : "✓ keeps its result if unchanged");
    } else if (changed.has(id)) {
      fate = "changed";
      notes.push(`~ ${fieldNames(changed.get(id))} changed · runs again`);
    } else if (resumed || reset.has(id)) {
      fate = "rerun";
      notes.push(resumed ? "↻ runs again" : "↻ starts over");
    } else {
      fate = "waiting";
      notes.push(statusWords(before[id] || "pending"));
    }
    fates.set(id, {
      fate,
      line: notes.join(" · "),
      inOld: oldIds.includes(id),
      inNew: resumed ? newIds.includes(id) : false,
      changes: changed.get(id) || [],
      reset: reset.has(id),
    });
  }
  return fates;
}

function fieldNames(changes) {
  return changes.map((change) => change.field).join(", ");
}

// Cytoscape element definitions for the replan: {nodes, edges, fates}. Each element's
// `data.base` holds its classes (the layout places elements that have one).
export function replanElements(replan, oldDoc, newDoc, statuses = {}) {
  const resumed = Boolean(replan.resume && newDoc);
  const diff = (resumed && replan.diff) || NO_CHANGES;
  const { nodes, edges } = diffElements(oldDoc, resumed ? newDoc : oldDoc, diff);
  const fates = stepFates(replan, oldDoc, newDoc, statuses);
  const reset = new Set(replan.reset);
  const out = [];
  for (const node of nodes) {
    const id = node.data.id;
    const info = fates.get(id);
    if (node.data.kind !== "step" || !info) {
      out.push({ ...node, data: { ...node.data, base: node.classes } });
      continue;
    }
    const step = (resumed && findStep(newDoc, id)) || findStep(oldDoc, id) || { id };
    const classes = ["step", step.tool ? "tool-step" : "agent-step", `r-${info.fate}`];
    if (info.fate === "failed" && !info.inNew && resumed) classes.push("r-gone");
    const shown = stepNodeData(step, node.data.deliverable);
    const data = {
      ...node.data,
      label: `${shown.label}\n${info.line}`,
      lines: shown.lines + 1,
      title: `${shown.title}\n${info.line}`,
      fate: info.fate,
      base: classes.join(" "),
    };
    if (reset.has(id)) data.parent = GROUP_ID;
    out.push({ group: "nodes", data, classes: classes.join(" ") });
  }
  if (reset.size) {
    const label = `Reset in v${replan.from}: ${replan.failure.step} and its descendants`;
    // The group comes first: Cytoscape needs a parent before its children.
    out.unshift({ group: "nodes", data: { id: GROUP_ID, kind: "group", label }, classes: "reset-group" });
  }
  const edgeOut = edges.map((edge) => {
    const classes = edge.classes
      .split(" ")
      .map((name) => (name === "added" ? "r-edge-added" : name === "removed" ? "r-edge-removed" : name))
      .join(" ");
    return { ...edge, data: { ...edge.data, base: classes }, classes };
  });
  return { nodes: out, edges: edgeOut, fates };
}
