// The side panel for the plan itself, shown when nothing is selected: goal, deliverable,
// risk level, approval scopes, budget, replans and who writes them, and the plan-level problems.
import { h } from "../common/dom.js";
import { effectiveDeliverable, setDeliverable, stepIds, steps, terminalStepIds, updatePlan } from "../model/document.js";
import { errorLine, field, numberInput, select, showError, splitList, textArea, textInput } from "./fields.js";

export function planPanel({ store }) {
  const doc = store.document;
  const edit = (name, patch) => store.edit((current) => updatePlan(current, patch), { key: `plan:${name}`, reason: "panel" });

  const goal = textArea("goal", doc.goal || "", { rows: 3, "data-field": "goal" });
  goal.addEventListener("input", () => edit("goal", { goal: goal.value }));

  const terminals = new Set(terminalStepIds(doc));
  const ids = stepIds(doc);
  const options = [["", `Automatic (the only terminal step${effectiveDeliverable(doc) && !doc.deliverable ? `: ${effectiveDeliverable(doc)}` : ""})`]];
  for (const id of ids) options.push([id, terminals.has(id) ? id : `${id} (not terminal)`]);
  if (doc.deliverable && !ids.includes(doc.deliverable)) options.push([doc.deliverable, `${doc.deliverable} (missing)`]);
  const deliverable = select("deliverable", options, doc.deliverable || "");
  deliverable.dataset.field = "deliverable";
  deliverable.addEventListener("change", () =>
    store.edit((current) => setDeliverable(current, deliverable.value || null), { reason: "panel" }),
  );

  const risk = select("risk_level", [["low", "low"], ["medium", "medium"], ["high", "high"]], doc.risk_level || "low");
  risk.addEventListener("change", () => edit("risk", { risk_level: risk.value }));

  const scopes = textInput("requires_approval_before", (doc.requires_approval_before || []).join(", "), { class: "mono" });
  scopes.addEventListener("input", () => edit("scopes", { requires_approval_before: splitList(scopes.value) }));

  const budget = doc.budget || {};
  const numberError = errorLine();
  const budgetInput = (name, integer) => {
    const input = numberInput(name, budget[name], { min: "0", step: integer ? "1" : "any" });
    input.addEventListener("input", () => {
      const next = { ...(store.document.budget || {}) };
      if (input.value === "") delete next[name];
      else {
        const value = Number(input.value);
        if (value < 0 || (integer && !Number.isInteger(value))) {
          showError(numberError, `${name} is ${integer ? "a whole number" : "a number"}, 0 or more.`);
          return;
        }
        next[name] = value;
      }
      showError(numberError, "");
      edit("budget", { budget: next });
    });
    return input;
  };
  const replans = numberInput("max_replans", doc.max_replans ?? 3, { min: "0", step: "1" });
  replans.addEventListener("input", () => {
    const value = Number(replans.value);
    if (replans.value === "" || !Number.isInteger(value) || value < 0) return;
    edit("replans", { max_replans: value });
  });
  // "manual" is the default and left out of the document, as the server writes it.
  const replanMode = select("replan", [["manual", "a person writes each replan"], ["auto", "the planner replans on a worker (auto)"]], doc.replan || "manual");
  replanMode.dataset.field = "replan";
  replanMode.addEventListener("change", () => edit("replan-mode", { replan: replanMode.value === "auto" ? "auto" : undefined }));

  const all = steps(doc);
  const edgeCount = all.reduce((sum, step) => sum + (Array.isArray(step.depends_on) ? step.depends_on.length : 0), 0);
  const planProblems = store.diagnostics.filter((d) => !(d.nodes || []).length);
  return h(
    "div",
    { class: "plan-panel" },
    h("div", { class: "panel-title" }, h("h2", {}, "Plan")),
    h("p", { class: "hint" }, `${all.length} step${all.length === 1 ? "" : "s"}, ${edgeCount} dependenc${edgeCount === 1 ? "y" : "ies"}. Select a step to edit it.`),
    planProblems.length
      ? h("ul", { class: "step-problems" }, planProblems.map((d) => h("li", { class: d.severity, dataset: { code: d.code } }, d.message)))
      : null,
    field("Goal", goal),
    field("Deliverable", deliverable, { hint: "A terminal step: its result is the plan's result." }),
    field("Risk level", risk),
    field("Requires approval before", scopes, { hint: "Permission scopes, comma-separated (e.g. external_email, database_write)." }),
    h(
      "fieldset",
      { class: "row-fields" },
      h("legend", {}, "Budget"),
      field("Max steps", budgetInput("max_steps", true)),
      field("Max tokens", budgetInput("max_tokens", true)),
      field("Max cost", budgetInput("max_cost", false)),
      numberError,
    ),
    field("Max replans", replans),
    field("Replans", replanMode, { hint: "Either way a replan passes the approval gate before the run resumes." }),
  );
}

export function edgePanel(dep, stepId) {
  return h(
    "div",
    { class: "edge-panel" },
    h("div", { class: "panel-title" }, h("h2", {}, "Dependency")),
    h("p", {}, h("code", {}, stepId), " depends on ", h("code", {}, dep), "."),
    h("div", { class: "panel-actions" }, h("button", { type: "button", class: "danger", "data-action": "delete-selection" }, "Remove dependency")),
  );
}

export function selectionPanel(count) {
  return h(
    "div",
    { class: "selection-panel" },
    h("div", { class: "panel-title" }, h("h2", {}, `${count} elements selected`)),
    h("div", { class: "panel-actions" }, h("button", { type: "button", class: "danger", "data-action": "delete-selection" }, "Delete selection")),
  );
}
