// What an argument may take from earlier steps, for the reference picker: the steps the
// compiler accepts a `$from` to (the step's ancestors: not itself, not a descendant, not
// an unrelated step, whose output may not exist yet when it runs), and the paths their
// outputs offer (from the tool's output schema; an `echo` step's from its own arguments).
// Pure: no DOM. The compiler (forge/compiler/references.py) still decides.
import { dependsOn, steps } from "./document.js";
import { isOperator } from "./references.js";

const MAX_DEPTH = 4;
const MAX_PATHS = 100;

const isObject = (value) => value !== null && typeof value === "object" && !Array.isArray(value);

// The steps `stepId` depends on, directly or through others, in document order.
export function referableSteps(doc, stepId) {
  const byId = new Map();
  for (const step of steps(doc)) if (!byId.has(step.id)) byId.set(step.id, step);
  const self = byId.get(stepId);
  if (!self) return [];
  const seen = new Set();
  const stack = [...dependsOn(self)];
  while (stack.length) {
    const id = stack.pop();
    if (seen.has(id) || !byId.has(id)) continue;
    seen.add(id);
    stack.push(...dependsOn(byId.get(id)));
  }
  seen.delete(stepId); // in a cycle the step is its own ancestor: its output does not exist yet
  return [...byId.values()].filter((step) => seen.has(step.id));
}

// A path's segments as written in a reference: dotted, or a JSON list when a key holds a
// dot (as forge/plan/references.py writes it).
function pathText(segments) {
  return segments.some((s) => s.includes(".") || !s) ? JSON.stringify(segments) : segments.join(".");
}

// [{path, type}] that `schema` (a tool's output_schema) declares: each key, then what is
// inside it; a list's items as its index 0; cut at MAX_DEPTH levels and MAX_PATHS paths.
export function outputPaths(schema) {
  const out = [];
  const walk = (node, at) => {
    if (!isObject(node) || at.length >= MAX_DEPTH) return;
    const properties = isObject(node.properties) ? node.properties : null;
    if ((node.type === "object" || (!node.type && properties)) && properties) {
      for (const [key, child] of Object.entries(properties)) {
        if (out.length >= MAX_PATHS) return;
        const segments = [...at, key];
        out.push({ path: pathText(segments), type: typeOf(child) });
        walk(child, segments);
      }
    } else if (node.type === "array" && isObject(node.items) && out.length < MAX_PATHS) {
      const segments = [...at, "0"];
      out.push({ path: pathText(segments), type: typeOf(node.items) });
      walk(node.items, segments);
    }
  };
  walk(schema, []);
  return out.slice(0, MAX_PATHS);
}

function typeOf(schema) {
  return isObject(schema) && typeof schema.type === "string" ? schema.type : null;
}

// [{path, type}] inside a known value (an echo step's arguments as written); a value
// from another step (an operator) is known only at run time: not looked into.
export function pathsInValue(value) {
  const out = [];
  const walk = (item, at) => {
    if (at.length >= MAX_DEPTH || isOperator(item)) return;
    const entries = Array.isArray(item) ? item.map((child, index) => [String(index), child]) : isObject(item) ? Object.entries(item) : [];
    for (const [key, child] of entries) {
      if (out.length >= MAX_PATHS) return;
      const segments = [...at, key];
      out.push({ path: pathText(segments), type: isOperator(child) ? null : kindOf(child) });
      walk(child, segments);
    }
  };
  walk(value, []);
  return out;
}

function kindOf(value) {
  if (typeof value === "boolean") return "boolean";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  if (typeof value === "string") return "string";
  if (Array.isArray(value)) return "array";
  if (isObject(value)) return "object";
  return "null";
}

// What the picker offers for `source` (a step) whose tool is `tool` (the catalogue's
// entry, or null: an agent step, an unknown tool): {known, paths}. Unknown: any path
// may be typed, and the whole output is always on offer.
export function offeredPaths(source, tool) {
  if (!tool) return { known: false, paths: [] };
  if (tool.echoes_args) return { known: true, paths: pathsInValue(source && source.args) };
  const paths = outputPaths(tool.output_schema);
  return { known: paths.length > 0, paths };
}
