// The argument form of a step, generated from its tool's JSON Schema (model/schema-form.js),
// with a raw JSON view for anything the form cannot show; a value taken from an earlier
// step (`$from`, `$join`) is shown and edited as its JSON. Calls onChange(args) with the
// whole new arguments object after every valid edit.
import { h } from "../common/dom.js";
import {
  FieldError,
  fieldsFor,
  formatValue,
  isEmptyObjectSchema,
  parseValue,
  withArgument,
} from "../model/schema-form.js";
import { isOperator } from "../model/references.js";
import { checkbox, errorLine, field, numberInput, select, showError, textArea, textInput } from "./fields.js";

export function argsForm(tool, args, onChange) {
  const schema = tool ? tool.args_schema : null;
  const fields = fieldsFor(schema);
  const current = { ...(args || {}) };
  const container = h("div", { class: "args-form", dataset: { tool: tool ? tool.name : "" } });
  if (isEmptyObjectSchema(schema) && !Object.keys(current).length) {
    container.append(h("p", { class: "hint" }, `${tool.name} takes no arguments.`));
    return container;
  }
  const known = new Set(fields.map((item) => item.name));
  const unknownKeys = Object.keys(current).filter((key) => !known.has(key));
  const useJson = !fields.length || unknownKeys.length > 0;
  if (!useJson) {
    for (const spec of fields) container.append(fieldFor(spec, current, onChange));
  }
  const jsonError = errorLine();
  const json = textArea("args-json", JSON.stringify(current, null, 2), { rows: 5, class: "mono" });
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
    onChange(value);
  });
  const jsonField = field("Arguments (JSON)", json, {
    hint: useJson && fields.length ? "Some arguments are not in the tool's schema." : "",
    error: jsonError,
  });
  if (useJson) container.append(jsonField);
  else {
    const details = h("details", { class: "raw-args" }, h("summary", {}, "Edit as JSON"), jsonField);
    container.append(details);
  }
  return container;

  function fieldFor(given, values, change) {
    const value = values[given.name];
    // A value taken from an earlier step is edited as the JSON it is written in, so
    // the form never turns it into text.
    const spec = isOperator(value)
      ? { ...given, kind: "json", description: "A value from an earlier step ($from, $join), as JSON." }
      : given;
    const label = spec.required ? `${spec.name} *` : spec.name;
    const error = errorLine();
    let control;
    if (spec.kind === "boolean") {
      const box = checkbox(spec.name, value, spec.description || spec.name);
      box.querySelector("input").addEventListener("change", (event) => {
        values[spec.name] = event.target.checked;
        change({ ...values });
      });
      return h("div", { class: "field" }, box);
    }
    if (spec.kind === "enum") {
      control = select(spec.name, [["", "—"], ...spec.options.map((option) => [option, option])], value ?? "");
    } else if (spec.kind === "integer" || spec.kind === "number") {
      control = numberInput(spec.name, value, {
        step: spec.kind === "integer" ? "1" : "any",
        min: spec.minimum ?? undefined,
        max: spec.maximum ?? undefined,
      });
    } else if (spec.kind === "string") {
      const long = typeof value === "string" && (value.length > 60 || value.includes("\n"));
      control = long ? textArea(spec.name, value, { rows: 3 }) : textInput(spec.name, value);
    } else {
      const rows = spec.kind === "json" ? 4 : 3;
      control = textArea(spec.name, formatValue(spec.kind, value), { rows, class: "mono" });
    }
    const hints = {
      "string-list": "One item per line.",
      "string-map": "One key=value per line.",
      json: "JSON.",
    };
    control.addEventListener(spec.kind === "enum" ? "change" : "input", () => {
      let parsed;
      try {
        parsed = parseValue(spec.kind, control.value);
      } catch (problem) {
        if (problem instanceof FieldError) {
          showError(error, `Expected ${problem.message}.`);
          return;
        }
        throw problem;
      }
      showError(error, "");
      const next = withArgument(values, spec.name, parsed);
      for (const key of Object.keys(values)) delete values[key];
      Object.assign(values, next);
      change({ ...values });
    });
    return field(label, control, { hint: spec.description || hints[spec.kind] || "", error });
  }
}
