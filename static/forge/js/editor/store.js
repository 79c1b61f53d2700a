// The editor's state: the document and where the author placed its steps, with their
// undo history, the latest diagnostics, and the saved version it started from. No DOM
// and no Cytoscape: views listen for its events and call its methods, and the document
// only ever changes through `edit`, `undo`, `redo` and `markSaved`.
//
// Events: "document" (detail: {reason}) after every change of the document,
// "diagnostics" when a compile answers, "version" after a save, "layout" (detail:
// {reason}) when steps are placed by hand, given back to the automatic layout, or put
// back by undo and redo. What importing the version's source warned of (a flattened
// Mermaid decision) stays among the diagnostics while the editor is on that version
// (model/paint.js withImportNotes).
//
// `layout` is where the author placed the steps ({nodeId: [x, y]}), or null for the
// automatic layout: saved with the version, beside the document and outside its content
// hash (plans/layout.py). The undo history holds both ({document, layout}), so that
// undo after a move puts the step back, and nothing else.
import { sameDocument, stepIds } from "../model/document.js";
import { IMPORT_CODES, withImportNotes } from "../model/paint.js";
import { canRedo, canUndo, createHistory, record, redo, replacePresent, undo } from "../model/history.js";

export class EditorStore extends EventTarget {
  constructor({ document, diagnostics = [], version }) {
    super();
    this.history = createHistory({ document, layout: positionsOf(version && version.layout) });
    this.savedDocument = document;
    this.version = version;
    this.diagnostics = diagnostics;
    // What importing this version's source text warned of: kept beside each compile.
    this.importNotes = importNotes(diagnostics);
    this.compileState = "idle"; // idle | pending | done | failed
    this.documentError = false; // whether the API refused the document before compiling
    this.savedLayout = this.layout;
    // Functions (next document, reason) -> whether the change may go on; asked before
    // every change of the document but the text's own (the text view's comments).
    this.guards = [];
  }

  get document() {
    return this.history.present.document;
  }

  get layout() {
    return this.history.present.layout;
  }

  get dirty() {
    return !sameDocument(this.document, this.savedDocument) || !sameLayout(this.layout, this.savedLayout);
  }

  // positions: {nodeId: [x, y]} placed by hand, or null for the automatic layout. One
  // step of undo, unless `undoable` is false (steps placed along with an edit: they
  // belong to that edit's step).
  setLayout(positions, { undoable = true, reason = "move" } = {}) {
    const next = positions && Object.keys(positions).length ? positions : null;
    if (sameLayout(next, this.layout)) return false;
    const state = { document: this.document, layout: next };
    this.history = undoable ? record(this.history, state, { now: Date.now() }) : replacePresent(this.history, state);
    this.emit("layout", { reason });
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
    if (reason !== "text" && !this.allowed(next, reason)) return false;
    this.history = record(this.history, { document: next, layout: this.layout }, { key, now: Date.now() });
    this.emit("document", { reason });
    return true;
  }

  replace(document, { key = null, reason = "replace" } = {}) {
    return this.edit(() => document, { key, reason });
  }

  undo() {
    if (!this.canUndo) return false;
    return this.travel(undo(this.history), "undo");
  }

  redo() {
    if (!this.canRedo) return false;
    return this.travel(redo(this.history), "redo");
  }

  travel(history, reason) {
    const before = this.history.present;
    const after = history.present;
    if (after.document !== before.document && !this.allowed(after.document, reason)) return false;
    this.history = history;
    // The document first: the graph draws its steps, then puts them where the layout says.
    if (after.document !== before.document) this.emit("document", { reason });
    if (after.layout !== before.layout) this.emit("layout", { reason });
    return true;
  }

  allowed(next, reason) {
    return this.guards.every((guard) => guard(next, reason));
  }

  setDiagnostics(diagnostics, { state = "done", documentError = false } = {}) {
    this.diagnostics = documentError ? diagnostics : withImportNotes(diagnostics, this.importNotes, stepIds(this.document));
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
    this.history = replacePresent(this.history, { document: version.document, layout: positionsOf(version.layout) });
    this.savedLayout = this.layout;
    this.diagnostics = version.diagnostics;
    this.importNotes = importNotes(version.diagnostics);
    this.emit("version", {});
    this.emit("layout", { reason: "saved" });
    this.emit("document", { reason: "saved" });
    this.emit("diagnostics", {});
  }

  emit(type, detail) {
    this.dispatchEvent(new CustomEvent(type, { detail }));
  }
}

function importNotes(diagnostics) {
  return (diagnostics || []).filter((diagnostic) => IMPORT_CODES.has(diagnostic.code));
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
