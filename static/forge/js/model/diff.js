// Two versions on one graph. Pure. The newer version's elements, with the steps and
// dependencies that were removed put back, and each element classed "added", "removed"
// or "changed" from the API's diff (GET /api/v1/plans/{id}/diff, forge.plan.diff_plans).
import { findStep } from "./document.js";
import { edgeId, stepNodeData, toElements } from "./elements.js";

export function diffElements(oldDoc, newDoc, diff) {
  const { nodes, edges } = toElements(newDoc);
  const added = new Set(diff.added_steps);
  const changed = new Map(diff.changed_steps.map((item) => [item.id, item.changes.map((c) => c.field)]));
  const addedEdges = new Set(diff.added_edges.map(([dep, step]) => edgeId(dep, step)));
  for (const node of nodes) {
    const id = node.data.stepId;
    if (node.data.kind !== "step" || node.data.id !== id) continue;
    if (added.has(id)) node.classes += " added";
    else if (changed.has(id)) {
      node.classes += " changed";
      node.data.changes = changed.get(id).join(", ");
    }
  }
  for (const edge of edges) if (addedEdges.has(edge.data.id)) edge.classes += " added";
  const present = new Set(nodes.map((node) => node.data.id));
  for (const id of diff.removed_steps) {
    if (present.has(id)) continue;
    const step = findStep(oldDoc, id) || { id };
    nodes.push({
      group: "nodes",
      data: { id, stepId: id, kind: "step", ...stepNodeData(step, false), deliverable: false },
      classes: "step removed",
    });
    present.add(id);
  }
  for (const [dep, step] of diff.removed_edges) {
    if (!present.has(dep) || !present.has(step)) continue;
    edges.push({
      group: "edges",
      data: { id: edgeId(dep, step), source: dep, target: step, dep, step },
      classes: "dependency removed",
    });
  }
  return { nodes, edges };
}
