// Finding a step on the graph (Ctrl+F or "/"): a box over the canvas that matches step
// ids and descriptions (model/search.js), selects the step found and centres it at a
// size one can read; Enter and Shift+Enter go to the next and the previous one, Escape
// closes the box. The matches are read again from the document at each keystroke and
// each Enter, so a step renamed or removed meanwhile is never gone to.
import { focusElements } from "../graph/focus.js";
import { findSteps } from "../model/search.js";

export class StepSearch {
  constructor(box, { cy, store, beforeShow = () => true }) {
    this.box = box;
    this.input = box.querySelector("#search-input");
    this.count = box.querySelector("#search-count");
    this.cy = cy;
    this.store = store;
    this.beforeShow = beforeShow; // makes the graph visible; false when it cannot be
    this.current = null; // the id of the step shown
    box.addEventListener("submit", (event) => event.preventDefault());
    this.input.addEventListener("input", () => {
      this.current = null;
      this.go(0);
    });
    this.input.addEventListener("keydown", (event) => {
      if (event.key === "Enter") this.go(event.shiftKey ? -1 : 1);
      else if (event.key === "Escape") this.close();
      else return;
      event.preventDefault(); // the page's shortcuts do not see it
    });
    box.addEventListener("click", (event) => {
      const button = event.target.closest("[data-search]");
      if (!button) return;
      if (button.dataset.search === "close") this.close();
      else this.go(button.dataset.search === "previous" ? -1 : 1);
    });
  }

  get open() {
    return !this.box.hidden;
  }

  show() {
    this.box.hidden = false;
    this.input.focus();
    this.input.select();
  }

  close() {
    this.box.hidden = true;
    this.count.textContent = "";
    this.current = null;
    if (this.box.contains(document.activeElement)) document.activeElement.blur();
  }

  // Shows the match `step` away from the current one (0: the first match).
  go(step) {
    const matches = findSteps(this.store.document, this.input.value);
    if (!this.input.value.trim()) {
      this.count.textContent = "";
      return;
    }
    if (!matches.length) {
      this.count.textContent = "No step found";
      return;
    }
    const at = this.current === null ? -1 : matches.indexOf(this.current);
    const index = at < 0 ? (step < 0 ? matches.length - 1 : 0) : (at + step + matches.length) % matches.length;
    this.current = matches[index];
    this.count.textContent = `${index + 1} of ${matches.length}`;
    if (this.beforeShow()) focusElements(this.cy, [this.current]);
  }
}
