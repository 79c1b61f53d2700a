// The problems panel: every diagnostic as one list item carrying data-code,
// data-severity and data-nodes (the step ids it concerns, space-separated; step ids hold
// no spaces). Activating an item (click, Enter) selects and centres its elements.
import { h, replaceChildren } from "../common/dom.js";

const SEVERITY_LABELS = { error: "Error", warning: "Warning", info: "Info" };

export class ProblemsPanel {
  constructor(list, { onActivate, empty = "No problems: the plan compiles." } = {}) {
    this.list = list;
    this.onActivate = onActivate;
    this.empty = empty;
    this.items = [];
    list.addEventListener("click", (event) => this.activate(event.target.closest("li.problem")));
    list.addEventListener("keydown", (event) => {
      if (event.key === "Enter" || event.key === " ") {
        event.preventDefault();
        this.activate(event.target.closest("li.problem"));
      }
    });
  }

  // diagnostics: [{code, severity, message, nodes, edges, hint?}] (a hint says how to fix it); located: element ids of each.
  show(diagnostics, located = []) {
    this.items = diagnostics.map((diagnostic, index) => ({ diagnostic, ids: located[index] || [] }));
    if (!diagnostics.length) {
      replaceChildren(this.list, h("li", { class: "problems-empty" }, this.empty));
      return;
    }
    replaceChildren(
      this.list,
      this.items.map(({ diagnostic }, index) =>
        h(
          "li",
          {
            class: `problem ${diagnostic.severity}`,
            tabindex: 0,
            role: "button",
            dataset: {
              index: String(index),
              code: diagnostic.code,
              severity: diagnostic.severity,
              nodes: (diagnostic.nodes || []).join(" "),
            },
          },
          h("span", { class: `severity ${diagnostic.severity}` }, SEVERITY_LABELS[diagnostic.severity] || diagnostic.severity),
          h("code", { class: "code" }, diagnostic.code),
          h("span", { class: "problem-message" }, diagnostic.message),
          diagnostic.hint ? h("span", { class: "problem-hint" }, diagnostic.hint) : null,
        ),
      ),
    );
  }

  // Nothing to say: no plan checked yet, or one that could not be read at all (its
  // refusal is said elsewhere): not "no problems".
  clear() {
    this.items = [];
    replaceChildren(this.list);
  }

  activate(item) {
    if (!item || !this.list.contains(item)) return;
    const entry = this.items[Number(item.dataset.index)];
    if (!entry) return;
    for (const other of this.list.querySelectorAll("li.problem.active")) other.classList.remove("active");
    item.classList.add("active");
    if (this.onActivate) this.onActivate(entry.diagnostic, entry.ids);
  }
}
