// The document as text, YAML or JSON, both ways. Pure. YAML is read with js-yaml's
// default YAML 1.2 core schema: no custom tags, so no code can come from a document.
import { dump, load } from "../../../vendor/js-yaml/js-yaml.esm.min.mjs";

export const FORMATS = ["yaml", "json"];

export function toText(doc, format) {
  if (format === "json") return `${JSON.stringify(doc, null, 2)}\n`;
  return dump(doc, { lineWidth: 100, noRefs: true });
}

export class TextError extends Error {
  constructor(message, line = null) {
    super(message);
    this.line = line;
  }
}

// The document the text spells, or a TextError saying where it is wrong.
export function fromText(text, format) {
  let data;
  try {
    data = format === "json" ? JSON.parse(text) : load(text);
  } catch (error) {
    throw new TextError(firstLine(error.message), lineOf(error, text));
  }
  if (!data || typeof data !== "object" || Array.isArray(data)) {
    throw new TextError("A plan is a mapping with goal and steps.");
  }
  if (data.steps !== undefined && !Array.isArray(data.steps)) {
    throw new TextError("steps must be a list.");
  }
  for (const [index, step] of (data.steps || []).entries()) {
    if (!step || typeof step !== "object" || Array.isArray(step)) {
      throw new TextError(`steps[${index}] must be a mapping.`);
    }
    if (typeof step.id !== "string") throw new TextError(`steps[${index}] needs an id.`);
  }
  return data;
}

function firstLine(message) {
  return String(message).split("\n")[0];
}

function lineOf(error, text) {
  if (error.mark && Number.isInteger(error.mark.line)) return error.mark.line + 1;
  const match = /position (\d+)/.exec(error.message || "");
  if (match) return text.slice(0, Number(match[1])).split("\n").length;
  const lineMatch = /line (\d+)/.exec(error.message || "");
  if (lineMatch) return Number(lineMatch[1]);
  // Some JSON.parse messages name no position ("Unexpected token '}', ... is not valid
  // JSON"): js-yaml reads JSON too, and its error has a mark.
  try {
    load(text);
  } catch (yamlError) {
    if (yamlError.mark && Number.isInteger(yamlError.mark.line)) return yamlError.mark.line + 1;
  }
  return null;
}
