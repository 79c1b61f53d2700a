// The diff page: two versions on one graph (added, removed, changed in their own colours,
// with a legend) and the list of changes. Test hook: window.forge.graph = {cy, ready}.
import { Api } from "../common/api.js";
import { h, replaceChildren } from "../common/dom.js";
import { readInitialData } from "../common/initial-data.js";
import { focusElements } from "../graph/focus.js";
import { createViewer } from "../graph/viewer.js";
import { diffElements } from "../model/diff.js";
import { steps } from "../model/document.js";

const data = readInitialData("diff-data");
const api = new Api(data.api);
const size = steps(data.to.document).length + steps(data.from.document).length;
const { cy, layout } = createViewer(document.getElementById("graph"), {
  size,
  filename: `plan-${data.plan.id}-v${data.from.number}-v${data.to.number}`,
});

function changeItem(kind, title, ids, detail) {
  const item = h("li", { class: kind, tabindex: 0, dataset: { kind, nodes: ids.join(" ") } }, h("strong", {}, title), detail);
  item.addEventListener("click", () => focusElements(cy, ids));
  return item;
}

async function show() {
  const diff = await api.get(`plans/${data.plan.id}/diff`, { query: { from: data.from.number, to: data.to.number } });
  const elements = diffElements(data.from.document, data.to.document, diff);
  // `base` marks the plan's own elements (see graph/render.js).
  cy.add([...elements.nodes, ...elements.edges].map((e) => ({ ...e, data: { ...e.data, base: e.classes } })));
  await layout();
  const items = [];
  for (const id of diff.added_steps) items.push(changeItem("added", `+ ${id}`, [id], " added"));
  for (const id of diff.removed_steps) items.push(changeItem("removed", `− ${id}`, [id], " removed"));
  for (const change of diff.changed_steps) {
    items.push(
      changeItem(
        "changed",
        `~ ${change.id}`,
        [change.id],
        h(
          "div",
          { class: "fields" },
          change.changes.flatMap((c) => c.lines.map((line) => h("div", {}, line))),
        ),
      ),
    );
  }
  for (const [dep, step] of diff.added_edges) items.push(changeItem("added", `+ ${dep} → ${step}`, [dep, step], " dependency added"));
  for (const [dep, step] of diff.removed_edges) items.push(changeItem("removed", `− ${dep} → ${step}`, [dep, step], " dependency removed"));
  for (const change of diff.plan_changes) {
    items.push(h("li", { class: "changed", dataset: { kind: "plan" } }, h("strong", {}, `plan ${change.field}`), h("div", { class: "fields" }, change.lines.map((line) => h("div", {}, line)))));
  }
  const total = items.length;
  document.getElementById("diff-summary").textContent = total
    ? `${diff.added_steps.length} added, ${diff.removed_steps.length} removed, ${diff.changed_steps.length} changed steps; ${diff.added_edges.length + diff.removed_edges.length} dependencies changed.`
    : "The two versions are the same.";
  replaceChildren(document.getElementById("diff-changes"), items);
  return window.forge.graph;
}

const ready = show();
window.forge = Object.assign(window.forge || {}, { graph: { cy, ready } });
