// The new-plan page: import a file (chosen or dropped), pasted text or an example, or
// start blank. The text is checked as it changes (POST /api/v1/compile with the source
// and format, so the server's own parsers and limits apply) and the plan is created with
// POST /api/v1/plans; then the editor opens on it. A blank plan is not created here: the
// editor opens on it unsaved (/plans/draw/) and stores it once it has a step.
import { Api, ApiError } from "../common/api.js";
import { debounce } from "../common/debounce.js";
import { readInitialData } from "../common/initial-data.js";
import { ProblemsPanel } from "../graph/problems.js";
import { counts } from "../model/paint.js";
import { fromText } from "../model/text.js";

const $ = (id) => document.getElementById(id);
const data = readInitialData("new-plan-data");
const api = new Api(data.api);
const form = $("new-plan");
const source = $("plan-source");
const format = $("plan-format");
const name = $("plan-name");
const summary = $("check-summary");
const createError = $("create-error");
const problems = new ProblemsPanel($("problems"), { empty: "No problems: the plan compiles." });
let mode = "import";
let fileName = "";

const EXTENSIONS = { json: "json", yaml: "yaml", yml: "yaml", mmd: "mermaid", mermaid: "mermaid" };

function selectTab(which) {
  mode = which;
  for (const tab of ["import", "blank"]) {
    $(`tab-${tab}`).setAttribute("aria-selected", String(tab === which));
    $(`panel-${tab}`).hidden = tab !== which;
  }
}
$("tab-import").addEventListener("click", () => selectTab("import"));
$("tab-blank").addEventListener("click", () => selectTab("blank"));

function setSource(text, fmt, label) {
  source.value = text;
  format.value = fmt || "";
  fileName = label || "";
  check();
  check.flush();
}

async function readFile(file) {
  if (!file) return;
  if (file.size > 4 * 1024 * 1024) {
    summary.textContent = `${file.name} is over 4 MiB: Forge refuses plans that large.`;
    return;
  }
  const extension = file.name.split(".").pop().toLowerCase();
  setSource(await file.text(), EXTENSIONS[extension] || "", file.name);
}

$("plan-file").addEventListener("change", (event) => readFile(event.target.files[0]));
const drop = $("drop-zone");
drop.addEventListener("dragover", (event) => {
  event.preventDefault();
  drop.classList.add("over");
});
drop.addEventListener("dragleave", () => drop.classList.remove("over"));
drop.addEventListener("drop", (event) => {
  event.preventDefault();
  drop.classList.remove("over");
  readFile(event.dataTransfer.files[0]);
});
$("plan-example").addEventListener("change", (event) => {
  const example = data.examples[Number(event.target.value)];
  if (example) setSource(example.source, example.format, example.file);
});

// The goal of a JSON or YAML document, to name the plan when the name is left empty.
function goalOf(text) {
  for (const fmt of ["json", "yaml"]) {
    try {
      const doc = fromText(text, fmt);
      if (typeof doc.goal === "string" && doc.goal.trim()) return doc.goal.trim();
    } catch {
      // not this format
    }
  }
  return "";
}

let sequence = 0;
const check = debounce(async () => {
  const text = source.value;
  const mine = ++sequence;
  const goal = goalOf(text);
  name.placeholder = goal ? `${goal.slice(0, 120)}` : "Taken from the plan's goal when left empty";
  if (!text.trim()) {
    summary.textContent = "Paste or choose a plan to check it.";
    delete summary.dataset.state;
    problems.clear();
    return;
  }
  summary.textContent = "Checking…";
  try {
    const body = { source: text };
    if (format.value) body.format = format.value;
    const result = await api.post("compile", body);
    if (mine !== sequence) return;
    const tally = counts(result.diagnostics);
    const stepCount = result.graph ? result.graph.nodes.length : null;
    summary.textContent = result.ok
      ? `Compiles${stepCount !== null ? ` (${stepCount} step${stepCount === 1 ? "" : "s"})` : ""}; ${tally.warning} warning${tally.warning === 1 ? "" : "s"}.`
      : `${tally.error} error${tally.error === 1 ? "" : "s"}, ${tally.warning} warning${tally.warning === 1 ? "" : "s"}: you can still import it and fix it in the editor.`;
    summary.dataset.state = result.ok ? "ok" : "error";
    problems.show(result.diagnostics);
  } catch (error) {
    if (mine !== sequence) return;
    summary.dataset.state = "refused";
    summary.textContent = error instanceof ApiError ? `Cannot be read: ${error.message}` : "The server did not answer.";
    problems.clear();
  }
}, 400);
source.addEventListener("input", () => check());
format.addEventListener("change", () => check());

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  createError.hidden = true;
  const button = $("create-button");
  let body;
  if (mode === "blank") {
    // Nothing is stored yet: the editor saves the plan once it has a step.
    const goal = $("plan-goal").value.trim();
    const query = new URLSearchParams({ name: name.value.trim() || goal || "Untitled plan", goal });
    window.location.assign(`${data.draw}?${query}`);
    return;
  } else {
    if (!source.value.trim()) {
      createError.textContent = "Paste a plan, choose a file or an example first, or start blank.";
      createError.hidden = false;
      return;
    }
    const fallback = goalOf(source.value) || fileName || "Imported plan";
    body = { name: (name.value.trim() || fallback).slice(0, 200), source: source.value };
    if (format.value) body.format = format.value;
    body.note = fileName ? `Imported from ${fileName}` : "Imported";
  }
  button.disabled = true;
  try {
    const plan = await api.post("plans", body);
    window.location.assign(data.editor.replace("{id}", String(plan.id)));
  } catch (error) {
    createError.textContent = error instanceof ApiError ? `Not created: ${error.message}` : "Not created: the server did not answer.";
    createError.hidden = false;
    button.disabled = false;
  }
});

if (source.value.trim()) check();
form.dataset.ready = "true";
