// The YAML text's comments, kept when the graph rewrites the text (issue 25): the new
// document is laid over the text's own YAML tree (eemeli/yaml's Document API, vendored
// under static/vendor/yaml/), so that what did not change keeps its comments, styles and
// order, and a changed value keeps the comments around it. Pure: no DOM. js-yaml
// (model/text.js) still reads the text and writes text that has no comments; this module
// is loaded only once the text view is opened (editor/text-view.js).
import { isMap, isScalar, isSeq, parseDocument, visit } from "../../../vendor/yaml/browser/index.js";

const OPTIONS = { lineWidth: 100, flowCollectionPadding: false };

const isObject = (value) => value !== null && typeof value === "object" && !Array.isArray(value);

// The comment lines of `text` ("# a note" -> "a note"), in order; none when it does not parse.
export function commentsOf(text) {
  const doc = parse(text);
  return doc ? commentLines(doc) : [];
}

// `data` (a plan document) written over `text`, keeping its comments; null when the text
// has none or does not parse (then the ordinary writer, model/text.js, writes it).
export function withComments(text, data) {
  const doc = parse(text);
  if (!doc || !commentLines(doc).length) return null;
  doc.contents = merge(doc, doc.contents, data);
  return doc.toString(OPTIONS);
}

// The comment lines of `before` that `after` no longer has (a removed step's, say).
export function lostComments(before, after) {
  const left = new Map();
  for (const line of commentsOf(after)) left.set(line, (left.get(line) || 0) + 1);
  const lost = [];
  for (const line of commentsOf(before)) {
    const count = left.get(line) || 0;
    if (count) left.set(line, count - 1);
    else lost.push(line);
  }
  return lost;
}

function parse(text) {
  let doc;
  try {
    doc = parseDocument(String(text));
  } catch {
    return null;
  }
  return doc.errors.length ? null : doc;
}

function commentLines(doc) {
  const found = [];
  const add = (comment) => {
    if (!comment) return;
    for (const line of String(comment).split("\n")) if (line.trim()) found.push(line.trim());
  };
  add(doc.commentBefore);
  visit(doc, (key, node) => {
    if (node && typeof node === "object") {
      add(node.commentBefore);
      add(node.comment);
    }
  });
  add(doc.comment);
  return found;
}

// The node for `value`, reusing `node` (its comments, style and key order) where it can.
function merge(doc, node, value) {
  if (isMap(node) && isObject(value)) {
    const byKey = new Map(node.items.map((pair) => [keyOf(pair), pair]));
    node.items = Object.entries(value).map(([key, child]) => {
      const pair = byKey.get(key);
      if (!pair) return doc.createPair(key, child);
      pair.value = merge(doc, pair.value, child);
      return pair;
    });
    return node;
  }
  if (isSeq(node) && Array.isArray(value)) {
    const olds = pairItems(doc, node.items, value);
    node.items = value.map((child, index) => (olds[index] ? merge(doc, olds[index], child) : doc.createNode(child)));
    return node;
  }
  if (isScalar(node) && (value === null || typeof value !== "object")) {
    if (node.value !== value) node.value = value;
    return node;
  }
  const created = doc.createNode(value);
  if (node && typeof node === "object") {
    created.commentBefore = node.commentBefore;
    created.comment = node.comment;
    created.spaceBefore = node.spaceBefore;
  }
  return created;
}

function keyOf(pair) {
  return String(isScalar(pair.key) ? pair.key.value : pair.key);
}

// For each new item, the old node it continues, or null. A list of the same length is
// taken item by item (an edit, a rename); otherwise items are matched by their step id,
// else by their value; the old items left continue the new items left, in order (a step
// renamed while another was added), so that only what was removed loses its comments.
function pairItems(doc, olds, values) {
  if (olds.length === values.length) return olds;
  const identity = (value) => (isObject(value) && typeof value.id === "string" ? `id:${value.id}` : `value:${JSON.stringify(value)}`);
  const free = new Map();
  olds.forEach((old, index) => {
    const key = identity(old && typeof old.toJS === "function" ? old.toJS(doc) : old);
    if (!free.has(key)) free.set(key, []);
    free.get(key).push(index);
  });
  const used = new Set();
  const paired = values.map((value) => {
    const left = free.get(identity(value));
    if (!left || !left.length) return null;
    const index = left.shift();
    used.add(index);
    return olds[index];
  });
  const rest = olds.filter((_, index) => !used.has(index));
  return paired.map((old) => old || rest.shift() || null);
}
