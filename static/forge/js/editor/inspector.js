// The side panel: the selected step, the selected dependency, several elements, or the
// plan when nothing is selected. It is rebuilt when the selection changes and when the
// document changes from elsewhere (undo, the text view, the graph); while the author
// types in it, it is left alone so that the focus stays where it is. Under the step's (or
// the plan's) panel: its review threads (editor/review-threads.js).
import { replaceChildren } from "../common/dom.js";
import { stepPanel } from "./step-panel.js";
import { edgePanel, planPanel, selectionPanel } from "./plan-panel.js";

export class Inspector {
  constructor(root, { cy, store, catalogue, threads = null }) {
    this.root = root;
    this.threads = threads; // ReviewThreads: the step's (or the version's) review threads
    if (threads) threads.addEventListener("change", () => this.schedule());
    this.cy = cy;
    this.store = store;
    this.catalogue = catalogue;
    this.frame = 0;
    cy.on("select unselect", () => this.schedule());
    store.addEventListener("document", (event) => {
      if (event.detail.reason !== "panel") this.schedule();
    });
    store.addEventListener("diagnostics", () => this.refreshProblems());
  }

  schedule() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.render();
    });
  }

  render() {
    const selected = this.cy.elements(":selected");
    let panel;
    let threads = null;
    if (selected.length === 1 && selected.isNode() && selected.data("kind") === "step") {
      if (this.threads) threads = this.threads.section(selected.data("stepId"));
      panel = stepPanel(selected.data("stepId"), {
        store: this.store,
        catalogue: this.catalogue,
        onRenamed: (id) => {
          // the node is re-created under its new id: select it again once drawn
          requestAnimationFrame(() => {
            this.cy.elements(":selected").unselect();
            this.cy.getElementById(id).select();
          });
        },
      });
    } else if (selected.length === 1 && selected.isEdge()) {
      panel = edgePanel(selected.data("dep"), selected.data("step"));
    } else if (selected.length > 1) {
      panel = selectionPanel(selected.length);
    } else {
      panel = planPanel({ store: this.store });
      if (this.threads) threads = this.threads.section("");
    }
    replaceChildren(this.root, panel, threads);
  }

  // A compile answered: rebuild only if focus is not in the panel (typing goes on).
  refreshProblems() {
    if (!this.root.contains(document.activeElement)) this.schedule();
  }
}
