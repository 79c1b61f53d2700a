// The editor's state: the document with its undo history, the latest diagnostics, and
// the saved version it started from. No DOM and no Cytoscape: views listen for its
// events and call its methods, and the document only ever changes through `edit`,
// `undo`, `redo` and `markSaved`.
//
// Events: "document" (detail: {reason}) after every change of the document,
// "diagnostics" when a compile answers, "version" after a save, "layout" when steps are
// placed by hand or given back to the automatic layout.
//
// `layout` is where the author placed the steps ({nodeId: [x, y]}), or null for the
// automatic layout: saved with the version, beside the document and outside its content
// hash (plans/layout.py), and not in the undo history.
import { sameDocument } from "../model/document.js";
import { canRedo, canUndo, createHistory, record, redo, replacePresent, undo } from "../model/history.js";

export class EditorStore extends EventTarget {
  constructor({ document, diagnostics = [], version }) {
    super();
    this.history = createHistory(document);
    this.savedDocument = document;
    this.version = version;
    this.diagnostics = diagnostics;
    this.compileState = "idle"; // idle | pending | done | failed
    this.documentError = false; // whether the API refused the document before compiling
    this.layout = positionsOf(version && version.layout);
    this.savedLayout = this.layout;
  }

  get document() {
    return this.history.present;
  }

  get dirty() {
    return !sameDocument(this.history.present, this.savedDocument) || !sameLayout(this.layout, this.savedLayout);
  }

  // positions: {nodeId: [x, y]} placed by hand, or null for the automatic layout.
  setLayout(positions) {
    const next = positions && Object.keys(positions).length ? positions : null;
    if (sameLayout(next, this.layout)) return false;
    this.layout = next;
    this.emit("layout", {});
    return true;
  }

  // The layout as POST /plans/{id}/versions takes it.
  layoutForSave() {
    return this.layout ? { positions: this.layout } : { positions: {} };
  }

  get canUndo() {
    return canUndo(this.history);
  }

  get canRedo() {
    return canRedo(this.history);
  }

  get errors() {
    return this.diagnostics.filter((d) => d.severity === "error").length;
  }

  // Applies `change` (document -> document). `key` merges consecutive edits of one field
  // into one undo step. Throws whatever `change` throws, leaving the state as it was.
  edit(change, { key = null, reason = "edit" } = {}) {
    const next = change(this.document);
    if (next === this.document) return false;
    this.history = record(this.history, next, { key, now: Date.now() });
    this.emit("document", { reason });
    return true;
  }

  replace(document, { key = null, reason = "replace" } = {}) {
    return this.edit(() => document, { key, reason });
  }

  undo() {
    if (!this.canUndo) return false;
    this.history = undo(this.history);
    this.emit("document", { reason: "undo" });
    return true;
  }

  redo() {
    if (!this.canRedo) return false;
    this.history = redo(this.history);
    this.emit("document", { reason: "redo" });
    return true;
  }

  setDiagnostics(diagnostics, { state = "done", documentError = false } = {}) {
    this.diagnostics = diagnostics;
    this.compileState = state;
    this.documentError = documentError;
    this.emit("diagnostics", {});
  }

  setCompileState(state) {
    this.compileState = state;
    this.emit("compile-state", { state });
  }

  // A new version was saved: its (server-normalised) document becomes both the present
  // and the saved baseline, without an undo step of its own.
  markSaved(version) {
    this.version = version;
    this.savedDocument = version.document;
    this.layout = positionsOf(version.layout);
    this.savedLayout = this.layout;
    this.history = replacePresent(this.history, version.document);
    this.diagnostics = version.diagnostics;
    this.emit("version", {});
    this.emit("layout", {});
    this.emit("document", { reason: "saved" });
    this.emit("diagnostics", {});
  }

  emit(type, detail) {
    this.dispatchEvent(new CustomEvent(type, { detail }));
  }
}

function positionsOf(layout) {
  const positions = layout && layout.positions;
  return positions && Object.keys(positions).length ? { ...positions } : null;
}

// Equal to a tenth of a pixel (what the server keeps).
function sameLayout(a, b) {
  if (!a || !b) return !a && !b;
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  const near = (x, y) => Math.abs(x - y) < 0.051;
  return keys.every((key) => b[key] && near(a[key][0], b[key][0]) && near(a[key][1], b[key][1]));
}
