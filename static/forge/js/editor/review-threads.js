// The review where the author works: the saved version's threads (and those carried over
// from its ancestors, outdated where the step changed) as a badge on each step with open
// threads and in the step panel, the header banner's count of open threads beside the
// comment that sent the version back, and "Submit for review" for a saved draft
// (POST versions/{id}/submit: it waits in the queue as it is, no new version).
//
// Reloaded after every save: the threads are read as seen from the new version.
import { toast } from "../common/toast.js";
import { findStep } from "../model/document.js";
import { threadsSection } from "../review/threads.js";

export class ReviewThreads extends EventTarget {
  constructor({ api, store, user, graphView, banner, summary, submit }) {
    super();
    this.api = api;
    this.store = store;
    this.user = user;
    this.graphView = graphView;
    this.banner = banner;
    this.summary = summary;
    this.submitButton = submit;
    this.threads = [];
    this.firstVersion = store.version.number;
    store.addEventListener("version", () => {
      // The decision in the banner was about the version this editor opened.
      if (this.banner && store.version.number !== this.firstVersion) {
        for (const p of this.banner.querySelectorAll("p:not(#review-threads-summary)")) p.hidden = true;
        delete this.banner.dataset.decision;
      }
      this.load();
    });
    for (const type of ["version", "document"]) store.addEventListener(type, () => this.updateSubmit());
    this.updateSubmit();
  }

  get versionId() {
    return this.store.version.id;
  }

  async load() {
    if (!this.versionId) return;
    try {
      const data = await this.api.get(`versions/${this.versionId}/threads`);
      this.threads = data.threads;
    } catch {
      toast("The review threads could not be loaded.", { kind: "error" });
      return;
    }
    const counts = {};
    for (const thread of this.threads) {
      if (thread.step_id && !thread.resolved && !thread.outdated) counts[thread.step_id] = (counts[thread.step_id] || 0) + 1;
    }
    this.graphView.setThreads(counts);
    this.showSummary();
    this.dispatchEvent(new Event("change"));
  }

  showSummary() {
    if (!this.summary) return;
    const open = this.threads.filter((t) => !t.resolved && !t.outdated);
    const outdated = this.threads.filter((t) => !t.resolved && t.outdated);
    const parts = [];
    if (open.length) {
      const steps = [...new Set(open.map((t) => t.step_id || "the version"))];
      parts.push(`${open.length} open review thread${open.length === 1 ? "" : "s"} (on ${steps.join(", ")}): select a step to read and answer.`);
    }
    if (outdated.length) parts.push(`${outdated.length} outdated (the step changed since).`);
    this.summary.textContent = parts.join(" ");
    this.summary.hidden = parts.length === 0;
    this.summary.dataset.open = String(open.length);
    this.summary.dataset.outdated = String(outdated.length);
    if (this.banner) this.banner.hidden = this.summary.hidden && !this.banner.dataset.decision;
  }

  // The threads section of the panel of `stepId`, or of the plan ("" : the whole version,
  // and threads on steps this document no longer has).
  section(stepId) {
    const doc = this.store.document;
    const threads = stepId
      ? this.threads.filter((t) => t.step_id === stepId)
      : this.threads.filter((t) => !t.step_id || !findStep(doc, t.step_id));
    const saved = !stepId || findStep(this.store.savedDocument || {}, stepId);
    return threadsSection({
      title: stepId ? "Review threads on this step" : "Review threads on the version",
      threads,
      api: this.api,
      versionId: saved ? this.versionId : null,
      stepId: stepId || "",
      canComment: Boolean(this.user.can_comment),
      onChange: () => this.load(),
      empty: stepId ? "No comments on this step." : "No comments on the whole version.",
    });
  }

  updateSubmit() {
    const button = this.submitButton;
    if (!button) return;
    const version = this.store.version;
    button.hidden = version.status !== "draft" || !this.user.can_submit;
    const draftNote = document.getElementById("planner-draft-note"); // the planner's banner
    if (draftNote) draftNote.hidden = version.status !== "draft";
    const why = this.store.dirty ? "Save your changes first: submitting sends the saved draft as it is" : null;
    button.disabled = button.hidden || Boolean(why);
    button.title = why || `Put v${version.number} up for review as it is`;
  }

  async submit() {
    const answer = await this.api.post(`versions/${this.versionId}/submit`, {});
    this.store.version = { ...this.store.version, status: answer.status, submitted: answer.submitted };
    this.store.emit("version", {});
    toast(`Version ${answer.version} waits for review.`, { kind: "success" });
  }
}
