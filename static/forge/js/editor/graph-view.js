// Keeps the editor's graph in step with the store: elements after every change of the
// document (a new layout only when the structure changed, keeping steps placed by hand
// where they are), paint after every compile.
import { applyDiagnostics, syncElements } from "../graph/render.js";
import { placedPositions, readableView, runLayout } from "../graph/layout.js";

export class GraphView {
  constructor(cy, store) {
    this.cy = cy;
    this.store = store;
    this.located = [];
    this.listeners = [];
    this.extraBadges = new Map(); // node id -> [{text, severity, count}]: review threads
    this.rendering = Promise.resolve();
    store.addEventListener("document", (event) => this.render(event.detail.reason));
    store.addEventListener("diagnostics", () => this.paint());
    // Undo and redo of a move (or of Auto-layout) put the steps back where they were.
    store.addEventListener("layout", (event) => {
      if (event.detail.reason === "undo" || event.detail.reason === "redo") this.replace();
    });
  }

  // Resolves once the graph shows the document (laid out if its structure changed);
  // `rendering` is the promise of the latest call.
  render(reason = "initial") {
    this.rendering = this.draw(reason);
    return this.rendering;
  }

  async draw(reason) {
    const changed = syncElements(this.cy, this.store.document);
    this.paint();
    if (changed) {
      const whole = reason === "initial" || reason === "text" || reason === "saved";
      const pinned = this.store.layout;
      await runLayout(this.cy, { animate: !whole, fit: whole, pinned });
      // Steps added to a plan placed by hand are placed too (below what they depend on).
      if (pinned && reason !== "initial" && reason !== "saved") {
        this.store.setLayout(placedPositions(this.cy), { undoable: false, reason: "placed" });
      }
      if (!whole) keepInView(this.cy);
    }
  }

  // The steps where the store's layout says (the automatic layout when it is null).
  replace() {
    this.rendering = this.rendering.then(() => runLayout(this.cy, { animate: true, fit: false, pinned: this.store.layout }));
    return this.rendering;
  }

  // Back to the automatic layout: forgets the places given by hand (one step of undo).
  async autoLayout() {
    this.store.setLayout(null, { reason: "auto" });
    await this.rendering;
    this.rendering = runLayout(this.cy, { animate: true, fit: true });
    return this.rendering;
  }

  // Open review threads per step ({stepId: count}), shown as a badge on the step.
  setThreads(counts) {
    this.extraBadges = new Map(
      Object.entries(counts).map(([id, count]) => [id, [{ text: count === 1 ? "1 comment" : `${count} comments`, severity: "thread", count }]]),
    );
    this.paint();
  }

  paint() {
    this.located = applyDiagnostics(this.cy, this.store.diagnostics, this.extraBadges);
    for (const listener of this.listeners) listener("paint");
  }

  // listener() runs after every paint (the problems panel needs the painted ids).
  onPaint(listener) {
    this.listeners.push(listener);
  }
}

// After an edit moved the steps: if some left the view and the whole plan fits at a
// readable size, show it all; otherwise (a large plan) leave the view where it is.
function keepInView(cy) {
  const nodes = cy.nodes("[base]");
  if (nodes.empty()) return;
  const box = nodes.renderedBoundingBox({ includeLabels: false });
  const inside = box.x1 >= 0 && box.y1 >= 0 && box.x2 <= cy.width() && box.y2 <= cy.height();
  if (inside) return;
  const model = nodes.boundingBox({ includeLabels: false });
  const zoom = Math.min((cy.width() - 96) / model.w, (cy.height() - 96) / model.h);
  if (zoom < 0.6) return;
  cy.fit(nodes, 48);
  readableView(cy);
}
