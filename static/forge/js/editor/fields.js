// Small builders for the inspector's labelled form fields. Values go in through
// properties (value, checked), never through markup.
import { h } from "../common/dom.js";

let counter = 0;

function fieldId(name) {
  counter += 1;
  return `f-${name}-${counter}`;
}

export function field(label, control, { hint = "", error = null } = {}) {
  const id = control.id || fieldId(control.name || "field");
  control.id = id;
  return h(
    "div",
    { class: "field" },
    h("label", { for: id }, label),
    control,
    hint ? h("p", { class: "hint" }, hint) : null,
    error,
  );
}

export function textInput(name, value, attributes = {}) {
  const input = h("input", { type: "text", name, autocomplete: "off", spellcheck: "false", ...attributes });
  input.value = value ?? "";
  return input;
}

export function numberInput(name, value, attributes = {}) {
  const input = h("input", { type: "number", name, ...attributes });
  input.value = value ?? "";
  return input;
}

export function textArea(name, value, attributes = {}) {
  const area = h("textarea", { name, rows: 2, spellcheck: "false", ...attributes });
  area.value = value ?? "";
  return area;
}

export function select(name, options, value) {
  const element = h(
    "select",
    { name },
    options.map(([optionValue, text, extra = {}]) => h("option", { value: optionValue, ...extra }, text)),
  );
  element.value = value ?? "";
  return element;
}

export function checkbox(name, checked, label) {
  const input = h("input", { type: "checkbox", name });
  input.checked = Boolean(checked);
  return h("label", { class: "check" }, input, " ", label);
}

export function errorLine() {
  return h("p", { class: "field-error", role: "alert", hidden: true });
}

export function showError(line, message) {
  line.textContent = message || "";
  line.hidden = !message;
}

// "a, b c" -> ["a", "b", "c"]
export function splitList(text) {
  return String(text || "")
    .split(/[\s,]+/)
    .map((item) => item.trim())
    .filter(Boolean);
}
