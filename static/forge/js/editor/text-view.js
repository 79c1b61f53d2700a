// The text view: the same document as YAML or JSON, in a CodeMirror 5 editor (vendored,
// loaded by plain <script>s before the modules: window.CodeMirror) with line numbers,
// syntax colours and a marker on the line of a syntax error.
//
// Nothing typed is ever lost:
// - typing re-reads the text (debounced); when it parses, it replaces the document, so the
//   graph, the panels and the compile follow; when it does not, the document is left as
//   it was, the error shows with its line, and the text stays as typed;
// - leaving the text for the graph, or for the other format (which rewrites the text), is
//   refused while the text does not parse: `leave()` / `show()` answer false and say why;
// - a change made elsewhere (the graph, the panel, undo) rewrites the text only while it
//   parses; broken text is kept, and says that the graph's edits are not in it.
//
// Beside the graph (the split view) the text follows every edit of the graph, and the
// graph every edit of the text that parses.
//
// Comments typed in the YAML text survive the graph's edits: the text is rewritten over
// its own YAML tree (model/yaml-comments.js, loaded when the text view first opens), not
// written afresh. The last YAML text is kept while the JSON or the graph is shown, so
// coming back to YAML brings the comments back. An edit that would drop a comment (the
// removal of the step it sits on) asks first, and is not made unless the author says so.
import { debounce } from "../common/debounce.js";
import { sameDocument } from "../model/document.js";
import { fromText, toText } from "../model/text.js";

const MODES = { yaml: "yaml", json: { name: "javascript", json: true } };
const GUTTER = "forge-errors";
const LINE_CLASS = "forge-error-line";

export class TextView {
  constructor({ root, area, error, store }) {
    this.root = root;
    this.area = area;
    this.error = error;
    this.store = store;
    this.format = "yaml";
    this.problem = null; // the TextError of the text as it stands, or null when it parses
    this.stale = false; // the document changed elsewhere while the text was broken
    this.marked = null; // the CodeMirror line handle carrying the error marker
    this.filling = false;
    this.yamlBase = ""; // the last YAML text, whose comments the next rewrite keeps
    this.baseComments = null; // whether yamlBase has comments (null: not looked yet)
    this.keeper = null; // model/yaml-comments.js, once loaded
    this.loading = null;
    this.prepared = null; // {document, text}: the text the guard already wrote for an edit
    this.read = debounce(() => this.apply(), 400);
    this.cm = createCodeEditor(area, () => {
      if (!this.filling) this.read();
    });
    store.addEventListener("document", (event) => {
      if (event.detail.reason === "text" || !this.visible) return;
      if (this.problem) {
        this.stale = true;
        this.showError();
      } else this.fill();
    });
    store.guards.push((next) => this.keepsComments(next));
  }

  // Loads the comment keeper (eemeli/yaml: some seventy small modules) once, when the
  // text is first shown: comments can only be typed there.
  loadKeeper() {
    if (!this.loading) {
      this.loading = import("../model/yaml-comments.js").then(
        (module) => (this.keeper = module),
        () => null, // without it the text is written as before, comments and all gone
      );
    }
    return this.loading;
  }

  // A change of the document may go on unless it drops comments of the YAML text and
  // the author, asked, says no.
  keepsComments(next) {
    if (!this.hasComments || this.problem) return true;
    const text = this.keeper.withComments(this.yamlBase, next);
    if (text === null) return true;
    const lost = this.keeper.lostComments(this.yamlBase, text);
    if (lost.length) {
      const listed = lost.slice(0, 5).map((line) => `# ${line}`).join("\n");
      const more = lost.length > 5 ? `\n(and ${lost.length - 5} more)` : "";
      const what = lost.length === 1 ? "a comment" : `${lost.length} comments`;
      const question = `This change removes ${what} from the YAML text:\n\n${listed}${more}\n\nGo on and remove ${lost.length === 1 ? "it" : "them"}? Cancel leaves the plan as it is.`;
      if (!window.confirm(question)) return false;
    }
    this.prepared = { document: next, text };
    return true;
  }

  // Whether the YAML text holds comments (that a save does not keep: a version stores the
  // plan, not its text).
  get hasComments() {
    if (!this.keeper || !this.yamlBase.includes("#")) return false;
    if (this.baseComments === null) this.baseComments = this.keeper.commentsOf(this.yamlBase).length > 0;
    return this.baseComments;
  }

  setBase(text) {
    this.yamlBase = text;
    this.baseComments = null;
  }

  // The text of the document in the current format: YAML over the last YAML text, so
  // that its comments stay.
  textFor(doc) {
    if (this.format !== "yaml") return toText(doc, this.format);
    if (this.prepared && this.prepared.document === doc) return this.prepared.text;
    const kept = this.hasComments ? this.keeper.withComments(this.yamlBase, doc) : null;
    return kept === null ? toText(doc, "yaml") : kept;
  }

  get visible() {
    return !this.root.hidden;
  }

  // The text as the author sees it.
  get value() {
    return this.cm ? this.cm.getValue() : this.area.value;
  }

  // Shows the document in `format`. Refused (false) when the text shown does not parse
  // and would be rewritten: another format. The same format keeps the text as it is.
  show(format) {
    this.read.flush();
    if (this.visible && format === this.format) return true;
    if (this.visible && this.problem) {
      this.refuse();
      return false;
    }
    this.loadKeeper();
    this.format = format;
    this.root.hidden = false;
    this.root.dataset.format = format;
    if (this.cm) this.cm.setOption("mode", MODES[format]);
    this.fill();
    if (this.cm) this.cm.refresh();
    return true;
  }

  // Whether the text may be hidden: only once it parses (its document is the store's).
  leave() {
    this.read.flush();
    if (this.problem) {
      this.refuse();
      return false;
    }
    return true;
  }

  hide() {
    if (!this.leave()) return false;
    this.root.hidden = true;
    return true;
  }

  refresh() {
    if (this.cm && this.visible) this.cm.refresh();
  }

  focus() {
    if (this.cm) this.cm.focus();
    else this.area.focus();
  }

  // Rewrites the text from the document, keeping the cursor and scroll where they were.
  fill() {
    const text = this.textFor(this.store.document);
    this.prepared = null;
    if (this.format === "yaml") this.setBase(text);
    this.filling = true;
    try {
      if (this.cm) {
        if (this.cm.getValue() !== text) {
          const cursor = this.cm.getCursor();
          const scroll = this.cm.getScrollInfo();
          this.cm.setValue(text);
          this.cm.clearHistory(); // undo in the text undoes typing, not the graph's edits
          this.cm.setCursor(cursor);
          this.cm.scrollTo(scroll.left, scroll.top);
        }
      } else this.area.value = text;
    } finally {
      this.filling = false;
    }
    this.problem = null;
    this.stale = false;
    this.showError();
  }

  // Reads the text; returns whether it parses (the document is then the text's).
  apply() {
    let doc;
    try {
      doc = fromText(this.value, this.format);
    } catch (problem) {
      this.problem = problem;
      this.showError();
      return false;
    }
    this.problem = null;
    this.stale = false;
    if (this.format === "yaml") this.setBase(this.value);
    this.showError();
    if (!sameDocument(doc, this.store.document)) this.store.replace(doc, { key: "text", reason: "text" });
    return true;
  }

  // The author tried to leave broken text: it stays, and the error says what to do.
  refuse() {
    this.showError({ refused: true });
    this.error.classList.remove("flash");
    void this.error.offsetWidth; // restart the animation
    this.error.classList.add("flash");
    this.focus();
  }

  showError({ refused = false } = {}) {
    const problem = this.problem;
    this.mark(problem && problem.line ? problem.line : null, problem ? problem.message : "");
    if (!problem) {
      this.error.textContent = "";
      this.error.hidden = true;
      return;
    }
    const where = problem.line ? `Line ${problem.line}: ` : "";
    const parts = [`${where}${problem.message}`];
    if (refused) parts.push("The text is kept as you typed it: fix it or undo it (Ctrl+Z) before leaving the text.");
    if (this.stale) parts.push("The graph changed meanwhile; those changes are not in this text, and fixing the text replaces them (undo in the graph brings them back).");
    this.error.textContent = parts.join(" ");
    this.error.hidden = false;
  }

  // A marker in the gutter and a tinted line at `line` (1-based), or none.
  mark(line, message) {
    const cm = this.cm;
    if (!cm) return;
    cm.operation(() => {
      if (this.marked) {
        cm.removeLineClass(this.marked, "wrap", LINE_CLASS);
        this.marked = null;
      }
      cm.clearGutter(GUTTER);
      if (!line || line > cm.lineCount()) return;
      const marker = document.createElement("span");
      marker.className = "forge-error-marker";
      marker.textContent = "●";
      marker.title = message;
      this.marked = cm.setGutterMarker(line - 1, GUTTER, marker);
      cm.addLineClass(this.marked, "wrap", LINE_CLASS);
    });
  }
}

// CodeMirror over the textarea (which it keeps in step), or the bare textarea when the
// vendored script did not load; onChange runs after every change of the text.
function createCodeEditor(area, onChange) {
  if (typeof window.CodeMirror !== "function") {
    area.addEventListener("input", onChange);
    return null;
  }
  const cm = window.CodeMirror.fromTextArea(area, {
    mode: MODES.yaml,
    lineNumbers: true,
    gutters: [GUTTER, "CodeMirror-linenumbers"],
    indentUnit: 2,
    tabSize: 2,
    indentWithTabs: false,
    lineWrapping: false,
    viewportMargin: 20,
    screenReaderLabel: area.getAttribute("aria-label") || "Plan source",
    extraKeys: {
      Tab: (editor) => editor.replaceSelection("  "),
      // The page's shortcuts (Escape clears the selection) still see Escape.
      Esc: () => window.CodeMirror.Pass,
    },
  });
  cm.on("changes", () => {
    cm.save(); // the textarea holds the text too (forms, tests)
    onChange();
  });
  return cm;
}
