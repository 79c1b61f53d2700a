// The argument form of a step, generated from its tool's JSON Schema (model/schema-form.js),
// with a raw JSON view ("Edit as JSON") for anything the form cannot show. A value taken
// from an earlier step is shown as what it is: a chip "from step X · path" for a `$from`
// (made with the picker, editor/reference-picker.js), its parts for a `$join` or a list
// or map holding references (editor/parts-editor.js); text typed into a field that is a
// reference as JSON ({"$from": ...}) becomes that reference. The fields and the JSON
// always agree: an edit of one redraws the other. Calls onChange(args) with the whole
// new arguments object after every valid edit.
import { h } from "../common/dom.js";
import { isOperator, readTypedOperator, referenceOf } from "../model/references.js";
import {
  FieldError,
  fieldsFor,
  formatValue,
  isEmptyObjectSchema,
  parseValue,
  withArgument,
} from "../model/schema-form.js";
import { checkbox, errorLine, numberInput, select, showError, textArea, textInput } from "./fields.js";
import { partsEditor, partsKind } from "./parts-editor.js";
import { referenceChip, referencePicker } from "./reference-picker.js";

const HINTS = {
  "string-list": "One item per line.",
  "string-map": "One key=value per line.",
  json: 'JSON. A value from an earlier step is {"$from": "STEP", "path": "a.b"}.',
};
const TEXT_KINDS = new Set(["string", "enum", "string-list", "string-map", "json"]);
let counter = 0;

// context: {store, stepId, catalogue}, for the picker (which steps, which paths).
export function argsForm(tool, args, onChange, context) {
  const schema = tool ? tool.args_schema : null;
  const specs = fieldsFor(schema);
  let current = { ...(args || {}) };
  const container = h("div", { class: "args-form", dataset: { tool: tool ? tool.name : "" } });
  if (isEmptyObjectSchema(schema) && !Object.keys(current).length) {
    container.append(h("p", { class: "hint" }, `${tool.name} takes no arguments.`));
    return container;
  }
  const known = new Set(specs.map((spec) => spec.name));
  const useJson = !specs.length || Object.keys(current).some((key) => !known.has(key));
  const fieldsBox = h("div", { class: "args-fields" });
  const slots = new Map(); // argument name -> its field's redraw()

  const jsonError = errorLine();
  const json = textArea("args-json", pretty(current), { rows: 5, class: "mono" });
  json.id = `args-json-${(counter += 1)}`;
  // An edit in a field: the JSON follows (the author is not typing there).
  const commit = (next) => {
    current = next;
    onChange({ ...current });
    if (document.activeElement !== json) {
      json.value = pretty(current);
      showError(jsonError, "");
    }
  };
  json.addEventListener("input", () => {
    let value;
    try {
      value = JSON.parse(json.value || "{}");
    } catch {
      showError(jsonError, "Not valid JSON yet.");
      return;
    }
    if (!value || typeof value !== "object" || Array.isArray(value)) {
      showError(jsonError, "Arguments are a JSON object.");
      return;
    }
    showError(jsonError, "");
    current = value;
    onChange({ ...value });
    // An edit in the JSON: the fields follow.
    for (const redraw of slots.values()) redraw();
    showUnknown();
  });
  const unknownNote = h("p", { class: "hint args-unknown", hidden: true });
  const showUnknown = () => {
    const unknown = Object.keys(current).filter((key) => !known.has(key));
    unknownNote.textContent = unknown.length ? `Not in the tool's schema, so only in the JSON below: ${unknown.join(", ")}.` : "";
    unknownNote.hidden = !unknown.length;
  };
  const jsonField = h(
    "div",
    { class: "field" },
    h("label", { for: json.id }, "Arguments (JSON)"),
    json,
    useJson && specs.length ? h("p", { class: "hint" }, "Some arguments are not in the tool's schema.") : null,
    h("p", { class: "hint" }, 'A value from an earlier step: {"$from": "STEP", "path": "a.b"}.'),
    jsonError,
  );
  if (useJson) {
    container.append(jsonField);
    return container;
  }
  for (const spec of specs) fieldsBox.append(argumentField(spec));
  showUnknown();
  container.append(fieldsBox, unknownNote, h("details", { class: "raw-args" }, h("summary", {}, "Edit as JSON"), jsonField));
  return container;

  // One argument: its control, or what it takes from an earlier step; redrawn when its
  // value changes shape (plain, a reference, parts) or when the JSON changed it.
  function argumentField(spec) {
    const slot = h("div", { class: "field arg", dataset: { arg: spec.name } });
    let shape = null;
    const set = (value) => {
      commit(withArgument(current, spec.name, value));
      if (shapeOf(value, spec) !== shape) redraw({ focus: true });
    };
    const pickerSlot = h("div", { class: "ref-picker-slot" });
    const closePicker = () => pickerSlot.replaceChildren();
    const pick = (was, done) => {
      pickerSlot.replaceChildren(
        referencePicker({
          ...context,
          current: was,
          onPick: (ref) => {
            closePicker();
            done(ref);
          },
          onCancel: () => {
            closePicker();
            pickButton.focus();
          },
        }),
      );
    };
    const pickButton = h(
      "button",
      { type: "button", class: "link ref-pick", title: `Take ${spec.name} from an earlier step's output`, "aria-label": `Take ${spec.name} from an earlier step` },
      "From a step…",
    );
    pickButton.addEventListener("click", () => pick(referenceOf(current[spec.name]) ? current[spec.name] : null, (ref) => set(ref)));

    function redraw({ focus = false } = {}) {
      const value = current[spec.name];
      shape = shapeOf(value, spec);
      const error = errorLine();
      const id = `arg-${spec.name}-${(counter += 1)}`;
      let body;
      let hint = spec.description || "";
      if (shape === "reference") {
        body = referenceChip(value, {
          onEdit: () => pick(value, (ref) => set(ref)),
          onRemove: () => set(undefined),
        });
      } else if (shape === "join" || shape === "list" || shape === "map") {
        body = partsEditor({
          kind: shape,
          value,
          name: spec.name,
          onChange: (next) => commit(withArgument(current, spec.name, next)),
          pickReference: pick,
        });
      } else {
        body = control(spec, value, shape, error, id, set);
        hint = hint || (shape === "operator" ? "Written as JSON ($literal, or a reference the compiler will check)." : HINTS[spec.kind] || "");
      }
      const label = spec.kind === "boolean" && shape === "plain" ? null : h("label", { for: id }, spec.required ? `${spec.name} *` : spec.name);
      const head = h("div", { class: "arg-head" }, label || h("span", { class: "arg-name" }, spec.required ? `${spec.name} *` : spec.name), pickButton);
      slot.replaceChildren(...[head, body, hint ? h("p", { class: "hint" }, hint) : null, error, pickerSlot].filter(Boolean));
      if (focus) {
        const target = slot.querySelector(".ref-chip .ref-text, .parts input, input, select, textarea");
        if (target) target.focus();
      }
    }
    slots.set(spec.name, () => {
      if (!slot.contains(document.activeElement)) redraw();
    });
    redraw();
    return slot;
  }
}

// How a field shows its value: "reference" (a chip), "join" | "list" | "map" (parts),
// "operator" (any other $-object: JSON) or "plain" (the schema's own control).
function shapeOf(value, spec) {
  if (referenceOf(value)) return "reference";
  const parts = partsKind(value, spec.kind);
  if (parts) return parts;
  if (isOperator(value)) return "operator";
  return "plain";
}

// The schema's control for a plain value (or JSON for an operator the form cannot show).
function control(given, value, shape, error, id, set) {
  const spec = shape === "operator" ? { ...given, kind: "json" } : given;
  let element;
  if (spec.kind === "boolean") {
    const box = checkbox(spec.name, value, spec.description || spec.name);
    box.querySelector("input").id = id;
    box.querySelector("input").addEventListener("change", (event) => set(event.target.checked));
    return box;
  }
  if (spec.kind === "enum") {
    element = select(spec.name, [["", "—"], ...spec.options.map((option) => [option, option])], value ?? "");
  } else if (spec.kind === "integer" || spec.kind === "number") {
    element = numberInput(spec.name, value, {
      step: spec.kind === "integer" ? "1" : "any",
      min: spec.minimum ?? undefined,
      max: spec.maximum ?? undefined,
    });
  } else if (spec.kind === "string") {
    const long = typeof value === "string" && (value.length > 60 || value.includes("\n"));
    element = long ? textArea(spec.name, value, { rows: 3 }) : textInput(spec.name, value);
  } else {
    element = textArea(spec.name, formatValue(spec.kind, value), { rows: spec.kind === "json" ? 4 : 3, class: "mono" });
  }
  element.id = id;
  element.addEventListener(spec.kind === "enum" ? "change" : "input", () => {
    // Text that spells a reference ({"$from": ...}) is that reference, not text.
    const typed = TEXT_KINDS.has(spec.kind) ? readTypedOperator(element.value) : null;
    if (typed) {
      showError(error, "");
      set(typed);
      return;
    }
    let parsed;
    try {
      parsed = parseValue(spec.kind, element.value);
    } catch (problem) {
      if (problem instanceof FieldError) {
        showError(error, `Expected ${problem.message}.`);
        return;
      }
      throw problem;
    }
    showError(error, "");
    set(parsed);
  });
  return element;
}

function pretty(args) {
  return JSON.stringify(args, null, 2);
}
