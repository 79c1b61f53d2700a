// Finding a step on the graph (Ctrl+F, "/"): the steps whose id or description holds the
// query, any case. Pure. A step whose id is the query comes first, the others in plan
// order, so Enter walks the plan from top to bottom.
import { steps } from "./document.js";

export function findSteps(doc, query) {
  const needle = String(query || "").trim().toLowerCase();
  if (!needle) return [];
  const exact = [];
  const found = [];
  const seen = new Set();
  for (const step of steps(doc)) {
    if (typeof step.id !== "string" || seen.has(step.id)) continue;
    seen.add(step.id);
    const id = step.id.toLowerCase();
    if (id === needle) exact.push(step.id);
    else if (id.includes(needle) || String(step.description || "").toLowerCase().includes(needle)) found.push(step.id);
  }
  return [...exact, ...found];
}
