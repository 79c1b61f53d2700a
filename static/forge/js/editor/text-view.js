// The text view: the same document as YAML or JSON. Typing re-reads the text (debounced)
// and, when it parses, replaces the document, so the graph, the panels and the compile
// follow; when it does not parse, the document is left as it was and the error shows
// with its line. A change made elsewhere rewrites the text, unless the author is typing
// in it.
import { debounce } from "../common/debounce.js";
import { sameDocument } from "../model/document.js";
import { fromText, toText } from "../model/text.js";

export class TextView {
  constructor({ root, area, error, store }) {
    this.root = root;
    this.area = area;
    this.error = error;
    this.store = store;
    this.format = "yaml";
    this.read = debounce(() => this.apply(), 400);
    area.addEventListener("input", () => this.read());
    area.addEventListener("keydown", (event) => {
      if (event.key === "Tab") {
        event.preventDefault();
        area.setRangeText("  ", area.selectionStart, area.selectionEnd, "end");
        this.read();
      }
    });
    store.addEventListener("document", (event) => {
      if (event.detail.reason !== "text" && this.visible) this.fill();
    });
  }

  get visible() {
    return !this.root.hidden;
  }

  show(format) {
    this.read.flush();
    this.format = format;
    this.root.hidden = false;
    this.root.dataset.format = format;
    this.fill();
  }

  hide() {
    this.read.flush();
    this.root.hidden = true;
  }

  fill() {
    this.area.value = toText(this.store.document, this.format);
    this.showError(null);
  }

  apply() {
    let doc;
    try {
      doc = fromText(this.area.value, this.format);
    } catch (problem) {
      this.showError(problem.line ? `Line ${problem.line}: ${problem.message}` : problem.message);
      return;
    }
    this.showError(null);
    if (!sameDocument(doc, this.store.document)) this.store.replace(doc, { key: "text", reason: "text" });
  }

  showError(message) {
    this.error.textContent = message || "";
    this.error.hidden = !message;
  }
}
