// Data between steps, as the editor sees it: the references a step's arguments make to
// earlier outputs (`{"$from": STEP, "path": "key.0.sub"}`, alone or as a part of a
// `{"$join": [...]}`; `{"$literal": ...}` is taken as written), the data edges they draw,
// and renaming a step inside them. Pure: no DOM. The syntax is forge/plan/references.py's
// (docs/plan-format.md); the compiler, not this module, says what is wrong with one.

export const FROM = "$from";
export const JOIN = "$join";
export const LITERAL = "$literal";

const isObject = (value) => value !== null && typeof value === "object" && !Array.isArray(value);

// A path as forge/plan/references.py writes it: dotted, or a JSON list when a key holds
// a dot.
export function pathText(raw) {
  if (Array.isArray(raw)) {
    const segments = raw.map(String);
    const listed = `[${segments.map((s) => JSON.stringify(s)).join(", ")}]`;
    return segments.some((s) => s.includes(".") || !s) ? listed : segments.join(".");
  }
  return typeof raw === "string" ? raw : "";
}

// An argument's place: "content", "env.NOTE", "argv[2]".
export function placeText(at) {
  let text = "";
  for (const item of at) text += typeof item === "number" ? `[${item}]` : text ? `.${item}` : item;
  return text || "the arguments";
}

function reference(value, at, part) {
  if (typeof value[FROM] !== "string" || !value[FROM]) return null;
  return { step: value[FROM], path: pathText(value.path), at: placeText(at), part };
}

// [{step, path, at, part}] in document order: `at` is the argument ("content",
// "env.NOTE", "argv[2]"), `part` the $join part's index or null.
export function stepReferences(step) {
  const args = step && isObject(step.args) ? step.args : null;
  if (!args) return [];
  const found = [];
  const walk = (value, at) => {
    if (Array.isArray(value)) {
      value.forEach((item, index) => walk(item, [...at, index]));
      return;
    }
    if (!isObject(value)) return;
    if (FROM in value) {
      const ref = reference(value, at, null);
      if (ref) found.push(ref);
      return;
    }
    if (JOIN in value) {
      const parts = Array.isArray(value[JOIN]) ? value[JOIN] : [];
      parts.forEach((part, index) => {
        if (isObject(part) && FROM in part) {
          const ref = reference(part, at, index);
          if (ref) found.push(ref);
        }
      });
      return;
    }
    if (LITERAL in value) return;
    for (const [key, item] of Object.entries(value)) walk(item, [...at, key]);
  };
  for (const [key, item] of Object.entries(args)) walk(item, [key]);
  return found;
}

// Whether an argument value is an operator object ($from, $join or $literal).
export function isOperator(value) {
  return isObject(value) && (FROM in value || JOIN in value || LITERAL in value);
}

// "read.content", or "read" for the whole output.
export function sourceText(ref) {
  return ref.path ? `${ref.step}.${ref.path}` : ref.step;
}

// One data edge per (source, step) pair: [{source, target, refs: [...]}], in document
// order of the step, for sources that are steps of the plan other than the step itself.
export function dataEdges(stepList) {
  const known = new Set(stepList.map((step) => step.id));
  const edges = [];
  const seen = new Set();
  for (const step of stepList) {
    if (seen.has(step.id)) continue; // a repeated id's edges are the first step's
    seen.add(step.id);
    const bySource = new Map();
    for (const ref of stepReferences(step)) {
      if (!known.has(ref.step) || ref.step === step.id) continue;
      if (!bySource.has(ref.step)) bySource.set(ref.step, []);
      bySource.get(ref.step).push(ref);
    }
    for (const [source, refs] of bySource) edges.push({ source, target: step.id, refs });
  }
  return edges;
}

// The label of a data edge: the paths it takes ("content", "(all)" for a whole output).
export function dataEdgeLabel(refs) {
  return [...new Set(refs.map((ref) => ref.path || "(all)"))].join(", ");
}

// A step's arguments with references to `oldId` renamed to `newId` (the same object when
// none names it), for model/document.js's renameStep.
export function renameInArgs(args, oldId, newId) {
  let changed = false;
  const walk = (value) => {
    if (Array.isArray(value)) {
      const next = value.map(walk);
      return next.some((item, index) => item !== value[index]) ? next : value;
    }
    if (!isObject(value)) return value;
    if (LITERAL in value) return value;
    if (FROM in value) {
      if (value[FROM] !== oldId) return value;
      changed = true;
      return { ...value, [FROM]: newId };
    }
    let copy = null;
    for (const [key, item] of Object.entries(value)) {
      const next = walk(item);
      if (next !== item) {
        copy = copy || { ...value };
        copy[key] = next;
      }
    }
    return copy || value;
  };
  const next = walk(args);
  return changed ? next : args;
}

// {"$from": step, "path": ...} from a path as typed: dotted ("notes.lines.0"), a JSON list
// of segments for keys that hold a dot, or empty for the whole output.
export function fromReference(step, typed = "") {
  const text = String(typed).trim();
  if (text.startsWith("[")) {
    try {
      const segments = JSON.parse(text);
      if (Array.isArray(segments) && segments.every((s) => typeof s === "string")) return { [FROM]: step, path: segments };
    } catch {
      // not a list: the text is a dotted path, and the compiler says what is wrong with it
    }
  }
  return text ? { [FROM]: step, path: text } : { [FROM]: step };
}

// {step, path} of a value that is exactly one reference (what a chip shows), else null.
// Anything more ({"$from": ..., "extra": 1}) is the compiler's to judge, and stays JSON.
export function referenceOf(value) {
  if (!isObject(value) || typeof value[FROM] !== "string" || !value[FROM]) return null;
  if (Object.keys(value).some((key) => key !== FROM && key !== "path")) return null;
  if (value.path !== undefined && typeof value.path !== "string" && !Array.isArray(value.path)) return null;
  return { step: value[FROM], path: pathText(value.path) };
}

// Whether a value is a `$join` the form can show part by part (text and references).
export function isJoin(value) {
  return (
    isObject(value) &&
    Object.keys(value).length === 1 &&
    Array.isArray(value[JOIN]) &&
    value[JOIN].every((part) => typeof part === "string" || typeof part === "number" || referenceOf(part))
  );
}

// The operator that text typed into a field spells as JSON ({"$from": ...}, {"$join":
// ...}, {"$literal": ...}), or null: text that is not one is text.
export function readTypedOperator(text) {
  const trimmed = String(text).trim();
  if (!trimmed.startsWith("{") || !trimmed.endsWith("}")) return null;
  let value;
  try {
    value = JSON.parse(trimmed);
  } catch {
    return null;
  }
  return isOperator(value) ? value : null;
}
