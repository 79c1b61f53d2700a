// The forge.plan/v1 document as plain data, and every edit the editor makes to it.
// Pure: no DOM, no Cytoscape. Each operation takes a document and returns a new one
// (the input is never changed), so the undo stack can keep documents as they were.
// Steps keep their order and their fields as the author wrote them; an edit touches only
// what it names, and fields emptied by an edit are removed rather than left empty, so
// the document stays as close as possible to what `forge.plan.to_data` writes. Renaming a
// step renames it everywhere: dependencies, the deliverable and `$from` references.
import { renameInArgs } from "./references.js";

export const ID_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;
export const STEP_FIELDS = [
  "id", "description", "depends_on", "tool", "args", "tools_allowed", "done_when",
  "timeout_s", "retries", "rollback_hint", "estimate",
];

export function emptyDocument(goal = "") {
  return { schema: "forge.plan/v1", goal, risk_level: "low", max_replans: 3, steps: [] };
}

export function steps(doc) {
  return Array.isArray(doc.steps) ? doc.steps : [];
}

export function stepIds(doc) {
  return steps(doc).map((step) => step.id);
}

export function findStep(doc, id) {
  return steps(doc).find((step) => step.id === id) || null;
}

export function dependsOn(step) {
  return Array.isArray(step.depends_on) ? step.depends_on : [];
}

// The deliverable the compiler will use: the named one, else the only terminal step.
export function effectiveDeliverable(doc) {
  if (doc.deliverable) return doc.deliverable;
  const terminals = terminalStepIds(doc);
  return terminals.length === 1 ? terminals[0] : null;
}

export function terminalStepIds(doc) {
  const dependedOn = new Set(steps(doc).flatMap(dependsOn));
  return stepIds(doc).filter((id) => !dependedOn.has(id));
}

// A fresh id: `prefix_N` with the smallest N not taken.
export function newStepId(doc, prefix = "step") {
  const taken = new Set(stepIds(doc));
  for (let n = 1; ; n += 1) {
    const id = `${prefix}_${n}`;
    if (!taken.has(id)) return id;
  }
}

function withSteps(doc, newSteps) {
  return { ...doc, steps: newSteps };
}

export function addStep(doc, { id, description = "", dependsOn: deps = [] } = {}) {
  const stepId = id || newStepId(doc);
  const step = { id: stepId, description, depends_on: [...deps] };
  if (!description) delete step.description;
  return withSteps(doc, [...steps(doc), step]);
}

// Removes the steps and every reference to them (dependencies, the deliverable).
export function removeSteps(doc, ids) {
  const gone = new Set(ids);
  const kept = steps(doc)
    .filter((step) => !gone.has(step.id))
    .map((step) => {
      const deps = dependsOn(step);
      return deps.some((dep) => gone.has(dep))
        ? { ...step, depends_on: deps.filter((dep) => !gone.has(dep)) }
        : step;
    });
  const next = withSteps(doc, kept);
  if (next.deliverable && gone.has(next.deliverable)) delete next.deliverable;
  return next;
}

// `step` comes to depend on `dep` (an edge dep -> step). Cycles are allowed here on
// purpose: the compiler reports them, and the editor paints them.
export function connect(doc, dep, stepId) {
  return mapStep(doc, stepId, (step) =>
    dependsOn(step).includes(dep) ? step : { ...step, depends_on: [...dependsOn(step), dep] },
  );
}

export function disconnect(doc, dep, stepId) {
  return mapStep(doc, stepId, (step) => ({
    ...step,
    depends_on: dependsOn(step).filter((item) => item !== dep),
  }));
}

export function removeEdges(doc, edges) {
  return edges.reduce((acc, [dep, stepId]) => disconnect(acc, dep, stepId), doc);
}

// Renames a step and every reference to it. Throws on an invalid or taken id.
export function renameStep(doc, oldId, newId) {
  if (oldId === newId) return doc;
  if (!ID_PATTERN.test(newId)) {
    throw new Error("An id is 1 to 64 letters, digits, '_', '.' or '-'.");
  }
  if (findStep(doc, newId)) throw new Error(`Another step is already called ${newId}.`);
  const renamed = steps(doc).map((step) => {
    let next = step;
    if (step.id === oldId) next = { ...next, id: newId };
    if (dependsOn(step).includes(oldId)) {
      next = { ...next, depends_on: dependsOn(step).map((dep) => (dep === oldId ? newId : dep)) };
    }
    if (step.args) {
      const args = renameInArgs(step.args, oldId, newId);
      if (args !== step.args) next = { ...next, args };
    }
    return next;
  });
  const next = withSteps(doc, renamed);
  if (next.deliverable === oldId) next.deliverable = newId;
  return next;
}

// Sets step fields; a field set to undefined, null, "" or an empty list/object is removed
// (depends_on excepted: every step states it).
export function updateStep(doc, id, patch) {
  return mapStep(doc, id, (step) => {
    const next = { ...step };
    for (const [key, value] of Object.entries(patch)) {
      if (key === "id") continue;
      if (key !== "depends_on" && isEmpty(value)) delete next[key];
      else next[key] = value;
    }
    return orderFields(next);
  });
}

export function setDeliverable(doc, id) {
  const next = { ...doc };
  if (id) next.deliverable = id;
  else delete next.deliverable;
  return orderPlanFields(next);
}

// Plan-level fields (goal, risk_level, requires_approval_before, budget, max_replans, replan).
export function updatePlan(doc, patch) {
  const next = { ...doc };
  for (const [key, value] of Object.entries(patch)) {
    if (key === "steps") continue;
    if (key !== "goal" && isEmpty(value)) delete next[key];
    else next[key] = value;
  }
  return orderPlanFields(next);
}

function mapStep(doc, id, change) {
  let found = false;
  const mapped = steps(doc).map((step) => {
    if (found || step.id !== id) return step;
    found = true;
    return change(step);
  });
  return found ? withSteps(doc, mapped) : doc;
}

export function isEmpty(value) {
  if (value === undefined || value === null || value === "") return true;
  if (Array.isArray(value)) return value.length === 0;
  if (typeof value === "object") return Object.keys(value).length === 0;
  return false;
}

function orderFields(step) {
  const ordered = {};
  for (const key of STEP_FIELDS) if (key in step) ordered[key] = step[key];
  for (const key of Object.keys(step)) if (!(key in ordered)) ordered[key] = step[key];
  return ordered;
}

const PLAN_FIELDS = [
  "schema", "goal", "deliverable", "risk_level", "requires_approval_before", "budget",
  "max_replans", "replan", "steps",
];

function orderPlanFields(doc) {
  const ordered = {};
  for (const key of PLAN_FIELDS) if (key in doc) ordered[key] = doc[key];
  for (const key of Object.keys(doc)) if (!(key in ordered)) ordered[key] = doc[key];
  return ordered;
}

// Canonical JSON (sorted keys), to tell whether two documents are the same.
export function canonical(value) {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value && typeof value === "object") {
    const keys = Object.keys(value).sort();
    return `{${keys.map((key) => `${JSON.stringify(key)}:${canonical(value[key])}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

export function sameDocument(a, b) {
  return canonical(a) === canonical(b);
}
