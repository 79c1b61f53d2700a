// The editor's header and status line: the saved version and its review status ("Saved
// v3: Approved"), apart from the live compile of what is on screen ("This draft:
// compiles"), unsaved changes, and whether Save, Approve and Run may be used. Approve and
// Run stay disabled while the document has errors, has unsaved changes, or is still being
// checked; Save while the plan has no step (a plan is never stored without one); each
// says why in its title.
import { steps } from "../model/document.js";
import { counts } from "../model/paint.js";

const STATUS_LABELS = {
  draft: "Draft",
  has_errors: "Has errors",
  awaiting_approval: "Awaiting approval",
  approved: "Approved",
  rejected: "Rejected",
  changes_requested: "Changes requested",
  superseded: "Superseded",
  unsaved: "Not saved yet",
};

export class StatusView {
  constructor(elements, { store, user }) {
    this.elements = elements;
    this.store = store;
    this.user = user;
    for (const type of ["document", "diagnostics", "version", "compile-state", "layout"]) {
      store.addEventListener(type, () => this.update());
    }
    this.update();
  }

  update() {
    const { store, user, elements } = this;
    const version = store.version;
    const dirty = store.dirty;
    const tally = counts(store.diagnostics);
    // A blank plan not saved yet has no version to name (its header says "Not saved yet").
    if (elements.version) elements.version.textContent = `v${version.number}`;
    if (elements.badge) {
      elements.badge.textContent = STATUS_LABELS[version.status] || version.status;
      elements.badge.dataset.status = version.status;
    }
    elements.dirty.hidden = !dirty;
    elements.undo.disabled = !store.canUndo;
    elements.redo.disabled = !store.canRedo;
    const state = store.compileState;
    elements.root.dataset.compile = state;
    elements.root.dataset.errors = String(tally.error);
    elements.counts.replaceChildren(
      pill("error", tally.error, "error"),
      pill("warning", tally.warning, "warning"),
      pill("info", tally.info, "info"),
    );
    elements.state.textContent =
      state === "pending" ? "Checking…" : state === "failed" ? "Could not reach the compiler" : tally.error ? "Does not compile" : "Compiles";
    elements.state.dataset.state = state === "pending" ? "pending" : tally.error ? "error" : state === "failed" ? "failed" : "ok";
    if (elements.draft) {
      elements.draft.textContent =
        state === "pending" ? "checking…" : state === "failed" ? "could not be checked" : tally.error ? "does not compile" : "compiles";
      elements.draft.dataset.state = elements.state.dataset.state;
    }
    if (elements.save) {
      const empty = steps(store.document).length === 0;
      setButton(elements.save, empty ? "Add a step first: a plan without steps is not saved" : null, "Save a new version");
    }

    const blocked = tally.error
      ? `Fix the ${tally.error} error${tally.error === 1 ? "" : "s"} first`
      : state === "pending"
        ? "Checking the plan…"
        : dirty
          ? "Save your changes first"
          : null;
    let approveWhy = blocked;
    if (!approveWhy && !user.can_approve) approveWhy = "Needs the approver role";
    else if (!approveWhy && version.author === user.username) approveWhy = "Another approver must review your version";
    else if (!approveWhy && version.status !== "awaiting_approval") approveWhy = `This version is ${STATUS_LABELS[version.status] || version.status}`;
    setButton(elements.approve, approveWhy, "Review and approve this version");
    let runWhy = blocked;
    if (!runWhy && !user.can_run) runWhy = "Needs the operator role";
    else if (!runWhy && version.status !== "approved") runWhy = "Only an approved version can run";
    setButton(elements.run, runWhy, "Start a run of this version");
  }
}

function pill(kind, count, label) {
  const span = document.createElement("span");
  span.className = `count ${kind}${count ? "" : " zero"}`;
  span.dataset.kind = kind;
  span.textContent = `${count} ${label}${count === 1 ? "" : "s"}`;
  return span;
}

function setButton(button, why, title) {
  button.disabled = Boolean(why);
  button.title = why || title;
}
