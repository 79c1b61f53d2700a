// A value made of parts, some of them taken from earlier steps, edited part by part in
// the argument form: a `$join` (text made of strings and references), a list of strings
// some of which are references, a string map some of whose values are references. Text
// parts are inputs; references are chips (editor/reference-picker.js). onChange(value)
// after every edit, with the value as the plan writes it.
import { h } from "../common/dom.js";
import { JOIN, referenceOf } from "../model/references.js";
import { referenceChip } from "./reference-picker.js";

const isObject = (value) => value !== null && typeof value === "object" && !Array.isArray(value);

// The kind of parts editor `value` needs in a field of `fieldKind`, or null.
export function partsKind(value, fieldKind) {
  const partial = (item) => typeof item === "string" || typeof item === "number" || referenceOf(item);
  if (isObject(value) && Object.keys(value).length === 1 && Array.isArray(value[JOIN]) && value[JOIN].every(partial)) return "join";
  if (fieldKind === "string-list" && Array.isArray(value) && value.some(referenceOf) && value.every(partial)) return "list";
  if (fieldKind === "string-map" && isObject(value)) {
    const items = Object.values(value);
    if (items.some(referenceOf) && items.every(partial)) return "map";
  }
  return null;
}

// kind: "join" | "list" | "map"; pickReference(current, done) opens the field's picker
// and calls done(reference).
export function partsEditor({ kind, value, name, onChange, pickReference }) {
  const rows =
    kind === "map"
      ? Object.entries(value).map(([key, item]) => ({ key, item }))
      : (kind === "join" ? value[JOIN] : value).map((item) => ({ key: "", item }));
  const list = h("ol", { class: "parts-list" });
  const root = h("div", { class: "parts", dataset: { parts: kind } });

  const emit = () => {
    if (kind === "map") onChange(Object.fromEntries(rows.filter((row) => row.key !== "").map((row) => [row.key, row.item])));
    else if (kind === "join") onChange({ [JOIN]: rows.map((row) => row.item) });
    else onChange(rows.map((row) => row.item));
  };

  const draw = (focusIndex = null) => {
    list.replaceChildren(
      ...rows.map((row, index) => {
        const parts = [];
        if (kind === "map") {
          const key = h("input", { type: "text", class: "mono part-key", name: `${name}-key`, "aria-label": `Key of entry ${index + 1}`, autocomplete: "off", spellcheck: "false" });
          key.value = row.key;
          key.addEventListener("input", () => {
            row.key = key.value;
            emit();
          });
          parts.push(key, h("span", { class: "part-sep" }, "="));
        }
        if (referenceOf(row.item)) {
          parts.push(
            referenceChip(row.item, {
              onEdit: () =>
                pickReference(row.item, (ref) => {
                  row.item = ref;
                  emit();
                  draw();
                }),
              onRemove: () => {
                rows.splice(index, 1);
                emit();
                draw();
              },
            }),
          );
        } else {
          // Text with line breaks (a heading and its blank line) needs a text area to keep them.
          const multiline = String(row.item).includes("\n");
          const attributes = { class: "part-text", name: `${name}-part`, "aria-label": `Part ${index + 1} of ${name}`, autocomplete: "off", spellcheck: "false" };
          const text = multiline
            ? h("textarea", { ...attributes, rows: Math.min(4, String(row.item).split("\n").length) })
            : h("input", { type: "text", ...attributes });
          text.value = String(row.item);
          text.addEventListener("input", () => {
            row.item = text.value;
            emit();
          });
          const remove = h("button", { type: "button", class: "ref-remove", title: "Remove this part", "aria-label": `Remove part ${index + 1}` }, "×");
          remove.addEventListener("click", () => {
            rows.splice(index, 1);
            emit();
            draw();
          });
          parts.push(text, remove);
        }
        return h("li", { class: "part" }, parts);
      }),
    );
    if (focusIndex !== null) {
      const input = list.children[focusIndex] && list.children[focusIndex].querySelector("input, textarea");
      if (input) input.focus();
    }
  };

  const addText = h("button", { type: "button", class: "link", "data-part": "text" }, kind === "map" ? "+ entry" : "+ text");
  addText.addEventListener("click", () => {
    rows.push({ key: "", item: "" });
    emit();
    draw(rows.length - 1);
  });
  const addReference = h("button", { type: "button", class: "link", "data-part": "reference" }, "+ from a step…");
  addReference.addEventListener("click", () =>
    pickReference(null, (ref) => {
      rows.push({ key: kind === "map" ? `KEY_${rows.length + 1}` : "", item: ref });
      emit();
      draw();
    }),
  );
  draw();
  const about = {
    join: "Text joined from these parts, in order ($join).",
    list: "One item per row.",
    map: "One key and value per row.",
  }[kind];
  root.append(h("p", { class: "hint parts-about" }, about), list, h("div", { class: "parts-actions" }, addText, addReference));
  return root;
}
