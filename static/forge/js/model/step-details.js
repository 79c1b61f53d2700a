// One step as the rows an approver reads: what it calls, with which arguments, when it
// counts as done, how long it may take, how to undo it, what it is expected to cost and
// whether it will pause for a person. Pure: no DOM. The version page, the approval queue
// and the replan page render these rows with common/step-details.js, so they agree.
//
// Arguments are shown as written, each value from an earlier step as a reference
// ({read.content}: which step, which path, and the operator as written), with its value
// when a run knows it. A field the step leaves out is a row that says so ("no rollback
// hint"): an approver must see what is missing as plainly as what is there.
import { dependsOn } from "./document.js";
import { FROM, JOIN, LITERAL, pathText, placeText } from "./references.js";

const isObject = (value) => value !== null && typeof value === "object" && !Array.isArray(value);
// Stand-ins for references while the arguments are written as JSON (private-use
// characters, which JSON.stringify leaves alone), replaced by their text afterwards.
const OPEN = "\uE000";
const CLOSE = "\uE001";
const STAND_IN = new RegExp(`"${OPEN}(\\d+)${CLOSE}"`, "g");

// JSON on one line, spaced for reading: {"$from": "read", "path": "content"}.
export function oneLine(value) {
  if (Array.isArray(value)) return `[${value.map(oneLine).join(", ")}]`;
  if (isObject(value)) return `{${Object.entries(value).map(([key, item]) => `${JSON.stringify(key)}: ${oneLine(item)}`).join(", ")}}`;
  return JSON.stringify(value) ?? "null";
}

function operatorOf(value) {
  if (!isObject(value)) return null;
  if (FROM in value) return "from";
  if (JOIN in value) return "join";
  if (LITERAL in value) return "literal";
  return null;
}

// One argument (a key of `args`): its value as written with references readable, the
// references it makes, and whether it holds a $literal.
function readArgument(name, value) {
  const refs = [];
  const tokens = [];
  let literal = false;
  const standIn = (text) => {
    tokens.push(text);
    return `${OPEN}${tokens.length - 1}${CLOSE}`;
  };
  const fromRef = (object, at, part) => {
    if (typeof object[FROM] !== "string" || !object[FROM]) return null;
    const path = pathText(object.path);
    const ref = { at: placeText(at), part, step: object[FROM], path, source: path ? `${object[FROM]}.${path}` : object[FROM], raw: oneLine(object) };
    refs.push(ref);
    return ref;
  };
  const walk = (item, at) => {
    if (Array.isArray(item)) return item.map((inner, index) => walk(inner, [...at, index]));
    const kind = operatorOf(item);
    if (kind === "from") {
      const ref = fromRef(item, at, null);
      return ref ? standIn(`{${ref.source}}`) : standIn(oneLine(item));
    }
    if (kind === "join") {
      const parts = Array.isArray(item[JOIN]) ? item[JOIN] : null;
      if (!parts) return standIn(oneLine(item));
      const texts = parts.map((part, index) => {
        const ref = operatorOf(part) === "from" ? fromRef(part, at, index) : null;
        return ref ? `{${ref.source}}` : oneLine(part);
      });
      return standIn(texts.join(" + ") || '""');
    }
    if (kind === "literal") {
      literal = true;
      return at.length === 1 ? item[LITERAL] : standIn(oneLine(item[LITERAL]));
    }
    if (isObject(item)) return Object.fromEntries(Object.entries(item).map(([key, inner]) => [key, walk(inner, [...at, key])]));
    return item;
  };
  const shown = (JSON.stringify(walk(value, [name]), null, 2) ?? "null").replace(STAND_IN, (_, index) => tokens[Number(index)]);
  return { refs, literal, shown, operators: tokens.length > 0 || literal };
}

function stepsText(refs) {
  const names = [...new Set(refs.map((ref) => ref.step))];
  return names.length === 1 ? `step ${names[0]}` : `steps ${names.slice(0, -1).join(", ")} and ${names.at(-1)}`;
}

// What a reader learns of a referenced value: nothing yet (no run: it comes from its step
// at run time), the value a run resolved ({text, truncated}), or why it has none.
function valueOf(name, refs, resolved) {
  if (!refs.length) return null;
  if (resolved === undefined || resolved === null) {
    return { state: "runtime", text: `comes from ${stepsText(refs)} at run time` };
  }
  const entry = (resolved.args || {})[name];
  if (entry && typeof entry.problem === "string") return { state: "unknown", text: entry.problem };
  if (entry && typeof entry.text === "string") return { state: "known", text: entry.text, truncated: Boolean(entry.truncated) };
  return { state: "unknown", text: `not known: this run has no value from ${stepsText(refs)} yet` };
}

// A text of several lines (a file's content, a message's body) as it reads, not as one
// JSON string of "\n"s; the note says how many lines and whether a line break ends it,
// which the text alone would not show.
function textNote(text) {
  const breaks = text.split("\n").length - 1;
  const ends = text.endsWith("\n");
  const lines = ends ? breaks : breaks + 1;
  return `text of ${lines} line${lines === 1 ? "" : "s"}, shown as it reads${ends ? "; it ends with a line break" : ""}`;
}

// [{name, operator, shown, raw, refs, value, note}] for each argument of a tool step.
export function argumentRows(step, resolved) {
  const args = isObject(step.args) ? step.args : {};
  return Object.entries(args).map(([name, value]) => {
    if (typeof value === "string" && value.includes("\n")) {
      return { name, operator: null, shown: value, raw: null, refs: [], value: null, text: true, note: textNote(value) };
    }
    const { refs, literal, shown, operators } = readArgument(name, value);
    const row = { name, operator: operatorOf(value), shown, raw: operators ? oneLine(value) : null, refs, value: valueOf(name, refs, resolved) };
    if (literal) row.note = "a $literal: the value exactly as written, no reference read in it";
    return row;
  });
}

// Map(step id -> reasons) from the compiler's `approval_required` diagnostics, whose
// message is "step 'x' will wait for approval: reason; reason" (forge/compiler/bindings.py).
export function pausesFromDiagnostics(diagnostics) {
  const pauses = new Map();
  for (const item of diagnostics || []) {
    if (item.code !== "approval_required") continue;
    const message = String(item.message || "");
    const marker = "will wait for approval: ";
    const at = message.indexOf(marker);
    const step = (item.nodes || [])[0];
    if (step) pauses.set(step, at >= 0 ? message.slice(at + marker.length).split("; ") : [message]);
  }
  return pauses;
}

// A Map of pauses from what a page has: a Map, a list of {step, reasons} (the queue's)
// or an object; null when it has none (then whether a step pauses is not known).
function pauseMap(pauses) {
  if (pauses === undefined || pauses === null) return null;
  if (pauses instanceof Map) return pauses;
  if (Array.isArray(pauses)) return new Map(pauses.map((pause) => [pause.step, pause.reasons || []]));
  return new Map(Object.entries(pauses));
}

function number(value) {
  return typeof value === "number" && Number.isFinite(value) ? value : null;
}

function doneWhenRow(done) {
  const row = { key: "done_when", label: "Done when" };
  if (done === undefined || done === null || done === "") return { ...row, absent: "no done_when: nothing checks the step's output" };
  const object = typeof done === "string" ? { description: done } : isObject(done) ? done : {};
  const list = (value) => (Array.isArray(value) ? value.map(String) : []);
  const keys = list(object.required_keys);
  const checks = list(object.checks);
  return {
    ...row,
    parts: [
      object.description ? { label: "description", text: String(object.description) } : { label: "description", absent: "no description" },
      keys.length ? { label: "required keys", codes: keys } : { label: "required keys", absent: "no required keys" },
      checks.length ? { label: "checks", codes: checks } : { label: "checks", absent: "no checks" },
    ],
  };
}

function estimateText(estimate) {
  const tokens = number(estimate.tokens) ?? 0;
  const cost = number(estimate.cost) ?? 0;
  const seconds = number(estimate.seconds);
  return [`${tokens} tokens`, `cost ${cost}`, seconds === null ? "no duration" : `${seconds} s`].join(" · ");
}

// {id, description, rows}. Options: `pauses` (a Map, a list of {step, reasons} or an
// object; leave it out when the diagnostics are not known) and `resolved` ({args: {name:
// {text, truncated} | {problem}}}: what a run resolved; leave it out when there is no run).
// Each row: {key, label} and one of text, codes, args, parts, or `absent` (what is missing).
export function stepDetails(step, { pauses, resolved } = {}) {
  const id = String(step.id ?? "");
  const agent = !step.tool;
  const allowed = Array.isArray(step.tools_allowed) ? step.tools_allowed.map(String) : [];
  const rows = [];
  const add = (key, label, fields) => rows.push({ key, label, ...fields });

  add("description", "Description", step.description ? { text: String(step.description) } : { absent: "no description" });
  if (!agent) add("tool", "Tool", { codes: [String(step.tool)] });
  else if (allowed.length) add("tool", "Tools allowed", { codes: allowed, note: "an agent step: its model chooses each call" });
  else add("tool", "Tools allowed", { absent: "no tool: an agent step may call none" });
  const after = dependsOn(step).map(String);
  add("depends_on", "After", after.length ? { codes: after } : { absent: "no dependency: it may start first" });
  if (agent) add("args", "Arguments", { absent: "none written: an agent step's model writes its calls' arguments" });
  else {
    const args = argumentRows(step, resolved);
    add("args", "Arguments", args.length ? { args } : { absent: "no arguments" });
  }
  rows.push(doneWhenRow(step.done_when));
  const timeout = number(step.timeout_s);
  add("timeout_s", "Timeout", timeout !== null ? { text: `${timeout} s` } : { absent: `no timeout_s: ${agent ? "the agent step's" : "the tool's"} default applies` });
  const retries = number(step.retries) ?? 0;
  add("retries", "Retries", retries > 0 ? { text: `${retries} automatic retr${retries === 1 ? "y" : "ies"} (idempotent tools only)` } : { absent: "no retries: a failure is not retried" });
  add("rollback_hint", "Rollback", step.rollback_hint ? { text: String(step.rollback_hint) } : { absent: "no rollback hint" });
  add("estimate", "Estimate", isObject(step.estimate) ? { text: estimateText(step.estimate) } : { absent: "no estimate" });
  const known = pauseMap(pauses);
  if (!known) add("approval", "Approval", { absent: "not known: the compiler's diagnostics are not at hand" });
  else if (known.has(id)) add("approval", "Approval", { text: `pauses for a person's approval: ${known.get(id).join("; ")}`, flag: "pause" });
  else add("approval", "Approval", { text: "does not pause for approval" });
  return { id, description: String(step.description || ""), rows };
}
