// A value taken from an earlier step, in the argument form: the chip that shows one
// ("from step read · content", removable) and the picker that makes one (an earlier step
// the compiler accepts, then a path its output offers, or any path when the output is
// not declared). Which steps and which paths: model/referable.js. Plan text goes in
// through textContent and option text only (h()).
import { h } from "../common/dom.js";
import { findStep } from "../model/document.js";
import { offeredPaths, referableSteps } from "../model/referable.js";
import { fromReference, referenceOf } from "../model/references.js";

let counter = 0;

// The chip of `value` (a {"$from": ...} that referenceOf reads). onEdit() reopens the
// picker; onRemove() drops the value.
export function referenceChip(value, { onEdit, onRemove }) {
  const ref = referenceOf(value);
  const edit = h(
    "button",
    { type: "button", class: "ref-text", title: "Take another value", "aria-label": `From step ${ref.step}, ${ref.path || "the whole output"}: change` },
    "from step ",
    h("code", { class: "ref-step" }, ref.step),
    " · ",
    ref.path ? h("code", { class: "ref-path" }, ref.path) : h("span", { class: "ref-path" }, "whole output"),
  );
  const remove = h("button", { type: "button", class: "ref-remove", title: "Remove this value", "aria-label": `Remove the value from ${ref.step}` }, "×");
  edit.addEventListener("click", onEdit);
  remove.addEventListener("click", onRemove);
  return h("span", { class: "ref-chip", dataset: { refStep: ref.step, refPath: ref.path } }, edit, remove);
}

// The picker, for the step `stepId` of the store's document: onPick(reference) with a
// {"$from": STEP, "path": ...}; onCancel() closes it. `current` preselects a reference.
export function referencePicker({ store, stepId, catalogue, current = null, onPick, onCancel }) {
  const doc = store.document;
  const sources = referableSteps(doc, stepId);
  const cancel = h("button", { type: "button", class: "secondary", "data-pick": "cancel" }, "Cancel");
  cancel.addEventListener("click", onCancel);
  const box = h("div", { class: "ref-picker", role: "group", "aria-label": "Take a value from an earlier step" });
  if (!sources.length) {
    box.append(
      h(
        "p",
        { class: "hint ref-none" },
        `Step ${stepId} depends on no earlier step, so it can take no output yet: first draw a dependency from the step whose output it needs onto this one.`,
      ),
      h("div", { class: "ref-actions" }, cancel),
    );
    return box;
  }
  counter += 1;
  const listId = `ref-paths-${counter}`;
  const was = current ? referenceOf(current) : null;
  const stepSelect = h(
    "select",
    { name: "ref-step", id: `ref-step-${counter}` },
    sources.map((source) => h("option", { value: source.id }, source.description ? `${source.id} — ${source.description}` : source.id)),
  );
  stepSelect.value = was && sources.some((s) => s.id === was.step) ? was.step : sources[sources.length - 1].id;
  const pathInput = h("input", {
    type: "text",
    name: "ref-path",
    id: `ref-path-${counter}`,
    list: listId,
    autocomplete: "off",
    spellcheck: "false",
    class: "mono",
    placeholder: "empty: the whole output",
  });
  pathInput.value = was ? was.path : "";
  const paths = h("datalist", { id: listId });
  const about = h("p", { class: "hint ref-about" });
  const offer = () => {
    const source = findStep(store.document, stepSelect.value);
    const tool = source && source.tool ? catalogue.byName.get(source.tool) || null : null;
    const offered = offeredPaths(source, tool);
    paths.replaceChildren(...offered.paths.map((item) => h("option", { value: item.path }, item.type || "")));
    if (offered.known) {
      about.textContent = `What ${source.tool}'s output holds: ${offered.paths.map((item) => item.path).slice(0, 8).join(", ")}${offered.paths.length > 8 ? ", …" : ""}. Leave the path empty for the whole output.`;
    } else if (source && source.tool && !tool) {
      about.textContent = `${source.tool} is not in the catalogue: type the path (dotted, e.g. items.0.name), or leave it empty for the whole output.`;
    } else if (source && source.tool) {
      about.textContent = `${source.tool} declares no output: type the path (dotted, e.g. items.0.name), or leave it empty for the whole output.`;
    } else {
      about.textContent = "An agent step answers what it likes: type the path (dotted, e.g. summary), or leave it empty for the whole output.";
    }
  };
  stepSelect.addEventListener("change", offer);
  offer();
  const use = h("button", { type: "button", "data-pick": "use" }, "Use");
  const pick = () => onPick(fromReference(stepSelect.value, pathInput.value));
  use.addEventListener("click", pick);
  pathInput.addEventListener("keydown", (event) => {
    if (event.key === "Enter") {
      event.preventDefault();
      pick();
    } else if (event.key === "Escape") {
      event.preventDefault();
      onCancel();
    }
  });
  box.append(
    h("label", { for: stepSelect.id }, "From step"),
    stepSelect,
    h("label", { for: pathInput.id }, "Path in its output"),
    pathInput,
    paths,
    about,
    h("div", { class: "ref-actions" }, use, cancel),
  );
  requestAnimationFrame(() => stepSelect.focus());
  return box;
}
