// Saving: a dialog asks for the change note (and whether to ask for review now), then
// POST /plans/{id}/versions makes a new immutable version from the current document. In
// replan mode (replan-mode.js) it asks why the run needs the replan instead, and the
// version is saved through the run (always up for review). A blank plan that was never
// saved (no planId) is created by its first save (POST /plans, as version 1). Nothing is
// saved while the plan has no step.
import { ApiError } from "../common/api.js";
import { toast } from "../common/toast.js";
import { steps } from "../model/document.js";

export class SaveDialog {
  constructor(dialog, { api, store, planId, planName = "", replan = null, onSaved, onCreated = null, commented = () => false }) {
    this.commented = commented; // whether the YAML text has comments, which a version does not keep
    this.dialog = dialog;
    this.api = api;
    this.store = store;
    this.planId = planId;
    this.planName = planName;
    this.replan = replan;
    this.onSaved = onSaved;
    this.onCreated = onCreated;
    this.form = dialog.querySelector("form");
    this.note = dialog.querySelector("[name=note]");
    this.submit = dialog.querySelector("[name=submit_for_review]");
    this.reason = dialog.querySelector("[name=replan_reason]");
    this.error = dialog.querySelector(".dialog-error");
    this.button = dialog.querySelector("button[type=submit]");
    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.save();
    });
    dialog.querySelector("[data-close]").addEventListener("click", () => dialog.close());
  }

  open() {
    if (this.dialog.open) return;
    if (!steps(this.store.document).length) {
      toast("Add a step first: a plan without steps is not saved.");
      return;
    }
    this.error.hidden = true;
    this.note.value = "";
    if (this.submit) this.submit.checked = true;
    if (this.reason) this.reason.value = "";
    const errors = this.store.errors;
    this.dialog.querySelector(".save-summary").textContent = errors
      ? `The plan has ${errors} error${errors === 1 ? "" : "s"}: it will be saved, but cannot be approved until they are fixed.`
      : "The plan compiles.";
    if (this.commented()) {
      this.dialog.querySelector(".save-summary").textContent +=
        " The comments in the YAML text stay in this editor only: a version stores the plan, not its text.";
    }
    this.dialog.showModal();
    this.note.focus();
  }

  async save() {
    this.button.disabled = true;
    this.error.hidden = true;
    try {
      if (this.planId === null) {
        const plan = await this.api.post("plans", {
          name: this.planName,
          document: this.store.document,
          note: this.note.value,
          submit: this.submit ? this.submit.checked : true,
        });
        // Nothing is left unsaved, so leaving for the plan's own editor asks nothing.
        const saved = { document: this.store.document, diagnostics: this.store.diagnostics };
        this.store.markSaved({ ...this.store.version, ...saved, number: 1 });
        this.dialog.close();
        this.onCreated(plan);
        return;
      }
      const version =
        this.replan && this.replan.enabled
          ? await this.replan.save(this.store.document, { note: this.note.value, replanReason: this.reason ? this.reason.value : "" })
          : await this.api.post(`plans/${this.planId}/versions`, {
              document: this.store.document,
              note: this.note.value,
              parent: this.store.version.number,
              submit: this.submit ? this.submit.checked : true,
              layout: this.store.layoutForSave(),
            });
      this.dialog.close();
      this.onSaved(version);
    } catch (problem) {
      this.error.textContent =
        problem instanceof ApiError ? `Not saved: ${problem.message}` : "Not saved: the server did not answer.";
      this.error.hidden = false;
    } finally {
      this.button.disabled = false;
    }
  }
}
