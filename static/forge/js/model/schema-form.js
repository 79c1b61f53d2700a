// A tool's argument JSON Schema as form fields, and form values back to arguments.
// Pure. Only the shapes built-in and typical tools use get their own widget (strings,
// numbers, booleans, enums, lists of strings, string maps); anything else is edited as
// JSON. The server validates the arguments against the full schema on every compile
// (`invalid_args`), so the form only helps; it never decides.

export function fieldsFor(schema) {
  if (!schema || schema.type !== "object" || typeof schema.properties !== "object") return [];
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  return Object.entries(schema.properties).map(([name, property]) => ({
    name,
    kind: kindOf(property || {}),
    required: required.has(name),
    description: (property && property.description) || "",
    options: property && Array.isArray(property.enum) ? property.enum.map(String) : [],
    minimum: property && typeof property.minimum === "number" ? property.minimum : null,
    maximum: property && typeof property.maximum === "number" ? property.maximum : null,
  }));
}

// Whether every argument can be edited in the generated form (else: raw JSON).
export function formCovers(schema) {
  return fieldsFor(schema).length > 0 || isEmptyObjectSchema(schema);
}

export function isEmptyObjectSchema(schema) {
  return Boolean(
    schema && schema.type === "object" && !schema.properties && schema.additionalProperties === false,
  );
}

export function kindOf(property) {
  if (Array.isArray(property.enum)) return "enum";
  switch (property.type) {
    case "string":
      return "string";
    case "integer":
      return "integer";
    case "number":
      return "number";
    case "boolean":
      return "boolean";
    case "array":
      return property.items && property.items.type === "string" ? "string-list" : "json";
    case "object":
      return property.additionalProperties && property.additionalProperties.type === "string"
        ? "string-map"
        : "json";
    default:
      return "json";
  }
}

// The text an input shows for `value`.
export function formatValue(kind, value) {
  if (value === undefined || value === null) return "";
  switch (kind) {
    case "string-list":
      return Array.isArray(value) ? value.join("\n") : JSON.stringify(value);
    case "string-map":
      return value && typeof value === "object" && !Array.isArray(value)
        ? Object.entries(value).map(([key, item]) => `${key}=${item}`).join("\n")
        : JSON.stringify(value);
    case "json":
      return JSON.stringify(value, null, 2);
    case "boolean":
      return value ? "true" : "false";
    default:
      return String(value);
  }
}

export class FieldError extends Error {}

// The argument value an input's text stands for; undefined for an empty input.
export function parseValue(kind, text) {
  const raw = typeof text === "string" ? text : String(text);
  if (kind !== "string" && kind !== "enum" && raw.trim() === "") return undefined;
  switch (kind) {
    case "string":
    case "enum":
      return raw === "" ? undefined : raw;
    case "integer": {
      const number = Number(raw);
      if (!Number.isInteger(number)) throw new FieldError("a whole number");
      return number;
    }
    case "number": {
      const number = Number(raw);
      if (!Number.isFinite(number)) throw new FieldError("a number");
      return number;
    }
    case "boolean":
      return raw === "true";
    case "string-list":
      return raw.split("\n").map((line) => line.trim()).filter(Boolean);
    case "string-map": {
      const map = {};
      for (const line of raw.split("\n")) {
        if (!line.trim()) continue;
        const at = line.indexOf("=");
        if (at < 1) throw new FieldError("one key=value per line");
        map[line.slice(0, at).trim()] = line.slice(at + 1);
      }
      return map;
    }
    default:
      try {
        return JSON.parse(raw);
      } catch {
        throw new FieldError("valid JSON");
      }
  }
}

// `args` with `name` set to `value`, or removed when the value is undefined.
export function withArgument(args, name, value) {
  const next = { ...(args || {}) };
  if (value === undefined) delete next[name];
  else next[name] = value;
  return next;
}
