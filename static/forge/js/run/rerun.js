// "Run again from here": a dialog that re-runs a stopped run from one or more chosen
// steps (POST /runs/{id}/rerun). Before anything starts it asks the server what the
// re-run would do (GET /runs/{id}/rerun?steps=...: the same rule that will decide,
// forge.runtime.reruns) and lists it: the steps that run again, those that keep the
// output this run recorded, those that did not succeed here and so run again too, and
// which of the steps run again will wait for a person's approval. Started, the page
// goes to the new run, which links back to this one.
import { h, replaceChildren } from "../common/dom.js";
import { FINAL_RUN_STATUSES, stepsWithStatus } from "./state.js";
import { describe } from "./words.js";

// Whether the run can be re-run now: it acts no more by itself and no step of it may
// have had an effect nobody recorded (the server refuses otherwise, 409).
export function canRerun(state) {
  const stopped = FINAL_RUN_STATUSES.has(state.status) || state.status === "needs_replan";
  return stopped && !stepsWithStatus(state, "running", "needs_reconciliation").length;
}

export class RerunDialog {
  constructor(dialog, { api, runId, urls }) {
    this.dialog = dialog;
    this.api = api;
    this.runId = runId;
    this.urls = urls;
    this.form = dialog.querySelector("form");
    this.chosenList = dialog.querySelector("#rerun-chosen");
    this.add = dialog.querySelector("#rerun-add");
    this.plan = dialog.querySelector("#rerun-plan");
    this.error = dialog.querySelector(".dialog-error");
    this.start = dialog.querySelector("#rerun-start");
    this.chosen = [];
    this.order = [];
    this.asked = 0;
    dialog.querySelector("[data-close]").addEventListener("click", () => dialog.close());
    this.add.addEventListener("change", () => {
      if (this.add.value) this.choose([...this.chosen, this.add.value]);
    });
    this.chosenList.addEventListener("click", (event) => {
      const remove = event.target.closest("[data-remove]");
      if (remove && this.chosen.length > 1) this.choose(this.chosen.filter((id) => id !== remove.dataset.remove));
    });
    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.submit();
    });
  }

  open(state, stepIds) {
    this.order = [...state.order];
    this.error.hidden = true;
    this.choose(stepIds);
    if (!this.dialog.open) this.dialog.showModal();
  }

  choose(stepIds) {
    const wanted = new Set(stepIds);
    this.chosen = this.order.filter((id) => wanted.has(id));
    replaceChildren(
      this.chosenList,
      h("span", { class: "muted small", text: "Run again from: " }),
      this.chosen.map((id) =>
        h(
          "span",
          { class: "step-chip chosen", dataset: { chosen: id } },
          id,
          this.chosen.length > 1 ? h("button", { type: "button", class: "link remove", dataset: { remove: id }, "aria-label": `Keep ${id}`, text: "×" }) : null,
        ),
      ),
    );
    replaceChildren(
      this.add,
      h("option", { value: "", text: "Add a step…" }),
      this.order.filter((id) => !wanted.has(id)).map((id) => h("option", { value: id, text: id })),
    );
    this.ask();
  }

  // What the server says this re-run would do, for the chosen steps as they are now.
  async ask() {
    const asked = (this.asked += 1);
    this.start.disabled = true;
    replaceChildren(this.plan, h("p", { class: "muted small", text: "Working out what runs again…" }));
    const query = new URLSearchParams(this.chosen.map((id) => ["steps", id]));
    try {
      const plan = await this.api.get(`runs/${this.runId}/rerun?${query}`);
      if (asked !== this.asked) return;
      this.show(plan);
      this.start.disabled = false;
    } catch (problem) {
      if (asked !== this.asked) return;
      replaceChildren(this.plan, h("p", { class: "error", role: "alert", text: describe(problem) }));
    }
  }

  show(plan) {
    const approvals = plan.needs_approval || [];
    replaceChildren(
      this.plan,
      group("rerun", `Runs again (${plan.steps.length})`, plan.steps),
      group("kept", `Keeps the output this run recorded, not run again (${plan.preserved.length})`, plan.preserved),
      plan.unfinished.length ? group("unfinished", "Did not succeed in this run, so runs again too", plan.unfinished) : null,
      approvals.length
        ? h(
            "div",
            { class: "rerun-group approval", dataset: { group: "approval" } },
            h("h3", { text: "Will wait for a person's approval again" }),
            h("ul", {}, approvals.map((item) => h("li", { dataset: { step: item.step } }, h("strong", { text: item.step }), ": ", item.reasons.join("; ")))),
          )
        : h("p", { class: "muted small", dataset: { group: "approval" }, text: "No step run again needs an approval." }),
    );
  }

  async submit() {
    this.start.disabled = true;
    this.error.hidden = true;
    try {
      const run = await this.api.post(`runs/${this.runId}/rerun`, { steps: this.chosen });
      window.location.assign(this.urls.run.replace("{id}", String(run.id)));
    } catch (problem) {
      this.error.textContent = describe(problem);
      this.error.hidden = false;
      this.start.disabled = false;
    }
  }
}

function group(kind, title, ids) {
  return h(
    "div",
    { class: `rerun-group ${kind}`, dataset: { group: kind } },
    h("h3", { text: title }),
    ids.length ? h("ul", { class: "chips-inline" }, ids.map((id) => h("li", { class: kind === "kept" ? "step-chip preserved" : "step-chip", text: id }))) : h("p", { class: "muted small", text: "none" }),
  );
}
