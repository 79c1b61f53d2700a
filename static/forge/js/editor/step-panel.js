// The side panel for one step: id, description, its data edges (the earlier outputs its
// arguments take, and the steps that take its output), tool (from the catalogue) with its
// argument form, tools_allowed, done_when, timeout, retries, rollback hint, the
// deliverable switch and the step's own problems. Every input edits the document at once
// through the store; edits of one field merge into one undo step.
import { h } from "../common/dom.js";
import {
  dependsOn,
  effectiveDeliverable,
  findStep,
  renameStep,
  setDeliverable,
  updateStep,
} from "../model/document.js";
import { sourceText, stepReferences } from "../model/references.js";
import { argsForm } from "./args-form.js";
import { downServer } from "./catalogue.js";
import {
  checkbox,
  errorLine,
  field,
  numberInput,
  select,
  showError,
  splitList,
  textArea,
  textInput,
} from "./fields.js";

export function stepPanel(stepId, { store, catalogue, onRenamed }) {
  const doc = store.document;
  const step = findStep(doc, stepId);
  if (!step) return h("p", { class: "hint" }, "This step no longer exists.");
  const edit = (field, patch) =>
    store.edit((current) => updateStep(current, stepId, patch), { key: `step:${stepId}:${field}`, reason: "panel" });

  // Id: renamed on change (blur or Enter), refused inline when invalid or taken.
  const idError = errorLine();
  const idInput = textInput("id", step.id, { class: "mono", "data-field": "id" });
  idInput.addEventListener("change", () => {
    const next = idInput.value.trim();
    try {
      store.edit((current) => renameStep(current, stepId, next), { reason: "rename" });
      showError(idError, "");
      onRenamed(next);
    } catch (problem) {
      showError(idError, problem.message);
      idInput.value = stepId;
    }
  });

  const description = textArea("description", step.description || "", { rows: 3, "data-field": "description" });
  description.addEventListener("input", () => edit("description", { description: description.value }));

  // Tool: a concrete call, or none for an agent step limited to tools_allowed.
  const tools = catalogue.tools;
  const toolOptions = [["", "— none: an agent step —"]];
  for (const tool of tools) {
    toolOptions.push([tool.name, tool.allowed ? tool.name : `${tool.name} (not allowed by policy)`]);
  }
  if (step.tool && !catalogue.byName.has(step.tool)) {
    const down = downServer(catalogue, step.tool);
    toolOptions.push([step.tool, `${step.tool} (${down ? "server down" : "unknown tool"})`]);
  }
  const toolSelect = select("tool", toolOptions, step.tool || "");
  toolSelect.dataset.field = "tool";
  const toolInfo = h("p", { class: "hint tool-info" });
  const argsSlot = h("div", { class: "args-slot" });
  const dataSlot = h("div", { class: "data-slot" }, dataList(doc, step));
  const renderArgs = () => {
    const current = findStep(store.document, stepId) || step;
    const tool = current.tool ? catalogue.byName.get(current.tool) : null;
    const down = current.tool && !tool ? downServer(catalogue, current.tool) : null;
    toolInfo.textContent = tool
      ? `${tool.description} Side effect: ${tool.side_effect}; scope: ${tool.permission_scope}; risk: ${tool.risk}.`
      : down
        ? `Its MCP server is down, so it cannot be checked or run now: ${down.error}`
        : current.tool
          ? "Not in this deployment's catalogue."
          : "The agent chooses calls among the allowed tools at run time.";
    argsSlot.replaceChildren();
    if (current.tool || (current.args && Object.keys(current.args).length)) {
      const onArgs = (args) => {
        edit("args", { args });
        // What the step takes from earlier steps follows its arguments.
        const now = findStep(store.document, stepId);
        const list = now ? dataList(store.document, now) : null;
        dataSlot.replaceChildren(...(list ? [list] : []));
      };
      argsSlot.append(argsForm(tool, current.args, onArgs, { store, stepId, catalogue }));
    }
  };
  toolSelect.addEventListener("change", () => {
    // Arguments the new tool's schema does not name are dropped (undo brings them back).
    const current = findStep(store.document, stepId) || step;
    const tool = catalogue.byName.get(toolSelect.value);
    const names = tool && tool.args_schema && tool.args_schema.properties;
    const args = names
      ? Object.fromEntries(Object.entries(current.args || {}).filter(([key]) => key in names))
      : current.args;
    edit("tool", { tool: toolSelect.value || undefined, args: toolSelect.value ? args : undefined });
    renderArgs();
  });
  renderArgs();

  // tools_allowed: every catalogue tool, plus names the catalogue does not know.
  const allowed = new Set(Array.isArray(step.tools_allowed) ? step.tools_allowed : []);
  const allowedNames = [...tools.map((tool) => tool.name)];
  for (const name of allowed) if (!catalogue.byName.has(name)) allowedNames.push(name);
  const allowedList = h(
    "div",
    { class: "check-list", "data-field": "tools_allowed" },
    allowedNames.map((name) => {
      const known = catalogue.byName.get(name);
      const missing = downServer(catalogue, name) ? "server down" : "unknown";
      const text = known ? (known.allowed ? name : `${name} (not allowed)`) : `${name} (${missing})`;
      const box = checkbox(name, allowed.has(name), text);
      if (!known) box.classList.add("unknown");
      box.querySelector("input").value = name;
      return box;
    }),
  );
  // A step with neither a tool nor allowed tools is an agent step that may call nothing
  // yet (every new step starts so): ask for its tools where they are chosen. The compiler
  // says the same (agent_without_tools, with its hint).
  const needsTools = () => {
    const current = findStep(store.document, stepId) || step;
    const listed = Array.isArray(current.tools_allowed) && current.tools_allowed.length > 0;
    return !current.tool && !listed;
  };
  const askTools = h(
    "p",
    { class: "needs-tools", role: "note" },
    h("strong", {}, "Choose the tools this agent step may call: "),
    "tick one or more below (tools_allowed), or pick the one tool it calls under Tool above.",
  );
  const showAsk = () => (askTools.hidden = !needsTools());
  allowedList.addEventListener("change", () => {
    const chosen = [...allowedList.querySelectorAll("input:checked")].map((input) => input.value);
    edit("tools_allowed", { tools_allowed: chosen });
    showAsk();
  });
  toolSelect.addEventListener("change", showAsk);
  showAsk();

  // done_when: a description, and required keys and JMESPath checks that make it verifiable.
  const done = normaliseDone(step.done_when);
  const doneDescription = textInput("done_description", done.description, { "data-field": "done_when.description" });
  const requiredKeys = textInput("required_keys", done.required_keys.join(", "), { class: "mono", "data-field": "done_when.required_keys" });
  const checks = textArea("checks", done.checks.join("\n"), { rows: 2, class: "mono", "data-field": "done_when.checks" });
  const editDone = () =>
    edit("done_when", {
      done_when: buildDone(doneDescription.value, splitList(requiredKeys.value), checks.value.split("\n").map((line) => line.trim()).filter(Boolean)),
    });
  for (const control of [doneDescription, requiredKeys, checks]) control.addEventListener("input", editDone);

  const numberError = errorLine();
  const timeout = numberInput("timeout_s", step.timeout_s, { min: "0", step: "any", "data-field": "timeout_s" });
  timeout.addEventListener("input", () => {
    if (timeout.value === "") return edit("timeout_s", { timeout_s: undefined });
    const value = Number(timeout.value);
    if (!(value > 0)) return showError(numberError, "Timeout is a number of seconds above 0.");
    showError(numberError, "");
    edit("timeout_s", { timeout_s: value });
  });
  const retries = numberInput("retries", step.retries ?? 0, { min: "0", step: "1", "data-field": "retries" });
  retries.addEventListener("input", () => {
    const value = retries.value === "" ? 0 : Number(retries.value);
    if (!Number.isInteger(value) || value < 0) return showError(numberError, "Retries is a whole number, 0 or more.");
    showError(numberError, "");
    edit("retries", { retries: value || undefined });
  });
  const rollback = textInput("rollback_hint", step.rollback_hint || "", { "data-field": "rollback_hint" });
  rollback.addEventListener("input", () => edit("rollback_hint", { rollback_hint: rollback.value }));

  const isDeliverable = effectiveDeliverable(doc) === stepId;
  const deliverableBox = checkbox("deliverable", doc.deliverable === stepId, "This step is the plan's deliverable");
  deliverableBox.querySelector("input").addEventListener("change", (event) => {
    store.edit((current) => setDeliverable(current, event.target.checked ? stepId : null), { reason: "panel" });
  });

  const deps = dependsOn(step);
  const problems = store.diagnostics.filter((d) => (d.nodes || []).includes(stepId));
  return h(
    "div",
    { class: "step-panel", dataset: { step: stepId } },
    h("div", { class: "panel-title" }, h("h2", {}, "Step"), isDeliverable ? h("span", { class: "tag deliverable" }, "deliverable") : null),
    problems.length
      ? h(
          "ul",
          { class: "step-problems" },
          problems.map((d) =>
            h(
              "li",
              { class: d.severity, dataset: { code: d.code } },
              d.message,
              d.hint ? h("span", { class: "problem-hint" }, d.hint) : null,
            ),
          ),
        )
      : null,
    field("Id", idInput, { error: idError }),
    field("Description", description),
    h("p", { class: "hint deps" }, deps.length ? `Depends on: ${deps.join(", ")}` : "Depends on nothing: a starting step."),
    dataSlot,
    h("fieldset", {}, h("legend", {}, "Tool"), field("Tool", toolSelect), toolInfo, argsSlot),
    h("fieldset", {}, h("legend", {}, "Tools allowed"), askTools, allowedList),
    h(
      "fieldset",
      {},
      h("legend", {}, "Done when"),
      field("Description", doneDescription),
      field("Required keys", requiredKeys, { hint: "Comma-separated keys the output must have." }),
      field("Checks", checks, { hint: "One JMESPath expression per line; each must be truthy." }),
    ),
    h(
      "fieldset",
      { class: "row-fields" },
      h("legend", {}, "Execution"),
      field("Timeout (s)", timeout),
      field("Retries", retries),
      numberError,
    ),
    field("Rollback hint", rollback),
    h("div", { class: "field" }, deliverableBox),
    h(
      "div",
      { class: "panel-actions" },
      h("button", { type: "button", class: "danger", "data-action": "delete-selection" }, "Delete step"),
    ),
  );

  // The step's data edges: what its arguments take ($from, docs/plan-format.md), and who
  // takes its output. Plan text goes in through textContent only (h()).
  function dataList(current, self) {
    const takes = stepReferences(self);
    const feeds = [];
    for (const other of current.steps || []) {
      if (other.id === self.id) continue;
      for (const ref of stepReferences(other)) {
        if (ref.step === self.id) feeds.push({ step: other.id, ref });
      }
    }
    if (!takes.length && !feeds.length) return null;
    return h(
      "section",
      { class: "data-edges" },
      takes.length ? h("h3", {}, "Takes from earlier steps") : null,
      takes.length
        ? h(
            "ul",
            { class: "data-in" },
            takes.map((ref) =>
              h(
                "li",
                { dataset: { source: ref.step, path: ref.path, at: ref.at } },
                h("code", {}, ref.at),
                " ← ",
                h("code", {}, sourceText(ref)),
                ref.part === null ? null : h("span", { class: "hint" }, ` (part ${ref.part} of its text)`),
              ),
            ),
          )
        : null,
      feeds.length ? h("h3", {}, "Its output feeds") : null,
      feeds.length
        ? h(
            "ul",
            { class: "data-out" },
            feeds.map(({ step: target, ref }) =>
              h(
                "li",
                { dataset: { target, path: ref.path, at: ref.at } },
                h("code", {}, `${target}.${ref.at}`),
                " ← ",
                h("code", {}, ref.path || "(all of it)"),
              ),
            ),
          )
        : null,
    );
  }

  function normaliseDone(value) {
    if (!value) return { description: "", required_keys: [], checks: [] };
    if (typeof value === "string") return { description: value, required_keys: [], checks: [] };
    return {
      description: value.description || "",
      required_keys: Array.isArray(value.required_keys) ? value.required_keys : [],
      checks: Array.isArray(value.checks) ? value.checks : [],
    };
  }

  function buildDone(text, keys, list) {
    if (!keys.length && !list.length) return text.trim() ? text : undefined;
    const out = {};
    if (text.trim()) out.description = text;
    if (keys.length) out.required_keys = keys;
    if (list.length) out.checks = list;
    return out;
  }
}
