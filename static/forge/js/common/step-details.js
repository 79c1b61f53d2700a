// The step details as DOM (model/step-details.js gives the rows): one entry per step, so
// the version page, the approval queue and the replan page show a step the same way, and
// the step table that lists every step of a plan beside its graph. Every word goes in
// through textContent (common/dom.js). Selecting a node highlights its step's entry and
// scrolls the table (not the page) to it; the button on an entry selects its node.
import { stepDetails } from "../model/step-details.js";
import { h } from "./dom.js";

const VALUE_WORDS = { runtime: "At run time", known: "Value in this run", unknown: "Value" };

function codes(list) {
  return list.map((code, index) => [index ? ", " : "", h("code", {}, code)]);
}

function refLine(ref) {
  const where = ref.path ? ["step ", h("code", {}, ref.step), ", path ", h("code", {}, ref.path)] : ["the whole output of step ", h("code", {}, ref.step)];
  const part = ref.part === null ? "" : ` (part ${ref.part} of its $join)`;
  return h("li", { dataset: { ref: ref.source } }, h("code", {}, ref.at), part, " ← ", ...where);
}

function argumentItem(arg) {
  const item = h(
    "li",
    { class: "step-arg", dataset: { arg: arg.name } },
    h("div", { class: "arg-head" }, h("code", { class: "arg-name" }, arg.name), arg.operator ? h("span", { class: "tag operator" }, `$${arg.operator}`) : null),
    h("pre", { class: arg.text ? "arg-shown text" : "arg-shown" }, arg.shown),
  );
  if (arg.refs.length) item.append(h("ul", { class: "arg-refs small" }, arg.refs.map(refLine)));
  if (arg.raw) item.append(h("div", { class: "arg-raw small" }, h("span", { class: "muted" }, "as written: "), h("code", {}, arg.raw)));
  if (arg.value) {
    const text = arg.value.truncated ? `${arg.value.text}\n… (cut: the run page has it whole)` : arg.value.text;
    const body = arg.value.state === "known" ? h("pre", { class: "json" }, text) : h("span", {}, text);
    item.append(h("div", { class: "arg-value small", dataset: { state: arg.value.state } }, h("span", { class: "muted" }, `${VALUE_WORDS[arg.value.state]}: `), body));
  }
  if (arg.note) item.append(h("p", { class: "muted small" }, arg.note));
  return item;
}

function partItem(part) {
  const body = part.absent ? h("span", { class: "absent" }, part.absent) : part.codes ? codes(part.codes) : part.text;
  return h("li", { dataset: { part: part.label } }, h("span", { class: "muted" }, `${part.label}: `), body);
}

function rowBody(row) {
  if (row.absent) return [h("span", { class: "absent" }, row.absent)];
  if (row.args) return [h("ul", { class: "step-args" }, row.args.map(argumentItem))];
  if (row.parts) return [h("ul", { class: "step-parts" }, row.parts.map(partItem))];
  const body = row.codes ? codes(row.codes) : [row.text];
  if (row.note) body.push(h("span", { class: "muted" }, ` (${row.note})`));
  return body;
}

// An entry for one step's details ({id, description, rows}); `mark` ({text, kind}) tags it
// (a diff's "added", a replan's fate, the version it is from).
export function stepEntry(details, { mark = null } = {}) {
  const head = h(
    "header",
    { class: "step-head" },
    h("button", { type: "button", class: "link step-select", dataset: { selectStep: details.id }, title: `Show step ${details.id} on the graph` }, h("code", {}, details.id)),
    mark ? h("span", { class: "tag step-mark", dataset: { mark: mark.kind || "" } }, mark.text) : null,
  );
  const fields = h("dl", { class: "step-fields" });
  for (const row of details.rows) {
    fields.append(
      h("dt", { dataset: { field: row.key } }, row.label),
      h("dd", { dataset: { field: row.key }, class: [row.absent ? "absent" : "", row.flag || ""].join(" ").trim() || undefined }, ...rowBody(row)),
    );
  }
  return h("article", { class: "step-entry", dataset: { step: details.id } }, head, fields);
}

// The entry of `step` straight from the document's step and what the page knows.
export function stepElement(step, options = {}) {
  return stepEntry(stepDetails(step, options), options);
}

// Entries built at once when a table is shown; the rest follow a chunk at a time, so a
// plan of thousands of steps never holds the page for long (about 0.75 ms an entry).
const FIRST = 60;
const CHUNK = 120;

// Every step of a plan, one entry each, in a box that scrolls by itself.
export class StepTable {
  constructor(container, { onSelect = null } = {}) {
    this.container = container;
    this.onSelect = onSelect;
    this.selected = null;
    this.entries = new Map();
    this.waiting = [];
    this.generation = 0;
    container.addEventListener("click", (event) => {
      const button = event.target.closest("[data-select-step]");
      if (!button || !container.contains(button)) return;
      this.highlight(button.dataset.selectStep, { scroll: false });
      if (this.onSelect) this.onSelect(button.dataset.selectStep);
    });
  }

  // `items`: [{step, mark, pauses, resolved}]: the step as written, its tag, the pauses
  // known for its version and the values a run resolved for it (see model/step-details.js).
  // data-state is "ready" once every entry is in.
  show(items) {
    this.generation += 1;
    this.entries = new Map();
    this.waiting = [...items];
    this.container.replaceChildren();
    this.container.dataset.steps = String(items.length);
    this.container.dataset.state = "building";
    this.build(FIRST);
    if (this.selected) this.highlight(this.selected, { scroll: false });
    const generation = this.generation;
    const next = () => {
      if (generation !== this.generation || !this.waiting.length) return;
      this.build(CHUNK);
      setTimeout(next, 0);
    };
    setTimeout(next, 0);
  }

  // Builds up to `count` more entries (all that wait when count is Infinity).
  build(count) {
    const made = this.waiting.splice(0, count).map(({ step, mark, pauses, resolved }) => {
      const element = stepElement(step, { mark, pauses, resolved });
      if (!this.entries.has(element.dataset.step)) this.entries.set(element.dataset.step, element);
      return element;
    });
    this.container.append(...made);
    if (!this.waiting.length) this.container.dataset.state = "ready";
  }

  entry(id) {
    if (!this.entries.has(id) && this.waiting.length) this.build(Infinity);
    return this.entries.get(id) || null;
  }

  // Marks the entry of step `id` (null: none) and scrolls the table to it.
  highlight(id, { scroll = true } = {}) {
    for (const entry of this.container.querySelectorAll(".step-entry.selected")) {
      entry.classList.remove("selected");
      entry.removeAttribute("aria-current");
    }
    this.selected = id;
    const entry = id === null ? null : this.entry(id);
    if (!entry) return;
    entry.classList.add("selected");
    entry.setAttribute("aria-current", "true");
    // The table is positioned, so an entry's offsetTop is from the table's top: only the
    // table scrolls, never the page under the graph.
    if (scroll) this.container.scrollTo({ top: Math.max(0, entry.offsetTop - 4), behavior: "smooth" });
  }
}

// Keeps `table` on the step selected in Cytoscape graph `cy` (node data stepId).
export function followSelection(cy, table) {
  cy.on("select", "node[kind = 'step']", (event) => table.highlight(event.target.data("stepId")));
  cy.on("unselect", "node[kind = 'step']", () => {
    if (cy.nodes("[kind = 'step']:selected").empty()) table.highlight(null);
  });
}
