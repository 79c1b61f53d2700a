// The step drawer: everything about one step of the run. Its arguments (from the plan
// version's document), output, contract verdict, error, attempts with their logs and
// artifacts (GET /runs/{id}/records), timing, tokens and cost; and what a person can do
// to it: approve or reject it while it waits, reconcile it after an interruption, and
// run the run again from it once the run has stopped (rerun.js).
//
// A waiting step shows its preview (what it will do) above the decision, and an approval
// posts the hash of the preview shown. When the server answers 409 preview_changed (the
// step shows another preview now), the drawer says so, asks the page to catch up, and
// shows the new preview when its event arrives. A failed step lists the artifacts of its
// failed attempt (build logs, ...) first, linked to their downloads. A waiting step
// also shows who must approve it (step-rules.js).
//
// Every value is shown with textContent (JSON pretty-printed into <pre>), so a step's
// output is words on the page, never markup. The drawer redraws only when its step
// changed, and keeps a comment being typed unless the step itself moved on.
import { h, replaceChildren } from "../common/dom.js";
import { previewCard } from "../common/preview-card.js";
import { findStep } from "../model/document.js";
import { CHANGED_SENTENCE, refusalOf } from "../model/preview.js";
import { utcTime } from "../model/time.js";
import { canRerun } from "./rerun.js";
import { stepRulesSection } from "./step-rules.js";
import { describe } from "./words.js";
import { STEP_LABELS } from "./state.js";
import { formatDuration } from "./timeline.js";

const PREVIEW_LIMIT = 64 * 1024;
// Statuses whose step keeps the artifacts of the attempt that failed.
const FAILED = new Set(["failed", "invalid"]);

export class StepDrawer {
  constructor(aside, { api, runId, user, onClose, onApprove, onReject, onReconcile, onOpenStep, onStale, onRerun }) {
    this.aside = aside;
    this.api = api;
    this.runId = runId;
    this.user = user;
    this.title = aside.querySelector("#drawer-title");
    this.badge = aside.querySelector("#drawer-status");
    this.body = aside.querySelector("#drawer-body");
    this.actions = { onApprove, onReject, onReconcile, onStale, onRerun };
    // step id -> the preview hash an approval was refused for (409 preview_changed).
    this.stale = new Map();
    this.stepId = null;
    this.shown = null;
    this.records = null;
    this.recordsKey = null;
    aside.querySelector("[data-close]").addEventListener("click", () => {
      this.close();
      onClose();
    });
    document.addEventListener("keydown", (event) => {
      if (event.key === "Escape" && !aside.hidden) {
        this.close();
        onClose();
      }
    });
    aside.addEventListener("click", (event) => {
      const opener = event.target.closest("[data-open-step]");
      if (opener) onOpenStep(opener.dataset.openStep, "");
    });
  }

  open(stepId, state, doc, focus = "") {
    if (this.stepId !== stepId) {
      this.records = null;
      this.recordsKey = null;
    }
    this.stepId = stepId;
    this.shown = null;
    this.aside.hidden = false;
    this.update(state, doc);
    const target = focus && this.body.querySelector(`[data-focus=${focus}] textarea, [data-focus=${focus}] input`);
    if (target) target.focus();
    else this.aside.querySelector("[data-close]").focus();
  }

  close() {
    this.aside.hidden = true;
    this.stepId = null;
    this.shown = null;
  }

  // Redraws when the step (an immutable object of the state) or the document changed.
  update(state, doc) {
    if (this.aside.hidden || this.stepId === null) return;
    const step = state.steps[this.stepId];
    // "Run again from here" is offered once the run stopped, to whoever may start runs.
    const rerunnable = Boolean(this.actions.onRerun && this.user.can_start && canRerun(state));
    const key = [step, doc, rerunnable];
    if (this.shown && this.shown.every((item, index) => item === key[index])) return;
    this.shown = key;
    this.rerunnable = rerunnable;
    this.rerunOf = state.rerunOf;
    this.byAgent = (state.agentSteps || []).includes(this.stepId) ? state.startedBy : null;
    this.render(step, findStep(doc, this.stepId));
    const recordsKey = step ? `${step.status}:${step.attempt}` : "none";
    if (this.recordsKey !== recordsKey) {
      this.recordsKey = recordsKey;
      this.loadRecords();
    }
  }

  render(step, planStep) {
    const status = step ? step.status : "pending";
    this.title.textContent = this.stepId;
    this.badge.dataset.status = status;
    this.badge.textContent = STEP_LABELS[status] || status;
    const sections = [];
    if (planStep && planStep.description) sections.push(h("p", { class: "step-description", text: planStep.description }));
    this.attemptOf = step ? { status, attempt: step.attempt } : null;
    if (!step) {
      sections.push(h("p", { class: "muted", text: "This step is not part of the run's current version." }));
    } else {
      sections.push(this.meta(step, planStep));
      if (this.rerunnable) sections.push(this.rerun());
      if (status === "awaiting_approval") sections.push(this.approval(step));
      if (status === "ready") sections.push(this.byAgent ? this.agentWait(this.byAgent) : this.slotWait());
      if (status === "needs_reconciliation") sections.push(this.reconcile(step));
      // A waiting or interrupted step's reason is already in its action box.
      if (step.error && status !== "awaiting_approval" && status !== "needs_reconciliation") sections.push(section("Error", h("pre", { class: "json error-text", dataset: { field: "error" }, text: step.error })));
      if (FAILED.has(status) && step.artifacts && step.artifacts.length) {
        this.failedSection = section("Artifacts of the failed attempt", h("p", { class: "muted", text: "Loading…" }));
        this.failedSection.dataset.field = "failed-artifacts";
        this.failedRefs = step.artifacts;
        sections.push(this.failedSection);
      } else {
        this.failedSection = null;
        this.failedRefs = [];
      }
    }
    sections.push(section("Arguments", planStep && planStep.args !== undefined ? json(planStep.args, "args") : h("p", { class: "muted", text: planStep && !planStep.tool ? "An agent step: the model chooses its tool calls." : "No arguments." })));
    if (step) {
      sections.push(section("Output", step.output === null || step.output === undefined ? h("p", { class: "muted", text: status === "running" ? "Running…" : "No output yet." }) : json(step.output, "output")));
      if (step.verdict || (planStep && planStep.done_when)) sections.push(verdictSection(step.verdict, planStep && planStep.done_when));
    }
    const deps = (planStep && planStep.depends_on) || [];
    if (deps.length) {
      sections.push(section("Depends on", h("ul", { class: "chips-inline" }, deps.map((id) => h("li", {}, h("button", { type: "button", class: "step-chip", dataset: { openStep: id }, text: id }))))));
    }
    this.recordsSection = section("Attempts, logs and artifacts", h("p", { class: "muted", text: "Loading…" }));
    sections.push(this.recordsSection);
    replaceChildren(this.body, sections);
    this.renderRecords();
  }

  meta(step, planStep) {
    const rows = [
      ["Tool", step.tool || (planStep && planStep.tool) || (planStep && planStep.tools_allowed ? `agent: ${planStep.tools_allowed.join(", ")}` : "—")],
      ["Attempt", step.attempt ? String(step.attempt) : "— (not started yet)"],
      // To the second, as the run page's head writes the run's start.
      ["Started", utcTime(step.startedAt, { seconds: true })],
      ["Finished", utcTime(step.finishedAt, { seconds: true })],
      ["Duration", step.startedAt && step.finishedAt ? formatDuration(Date.parse(step.finishedAt) - Date.parse(step.startedAt)) : "—"],
      ["Tool time", step.latencyMs === null || step.latencyMs === undefined ? "—" : formatDuration(step.latencyMs)],
      ["Tokens", Number(step.tokens || 0).toLocaleString("en")],
      ["Cost", step.cost ? `$${Number(step.cost).toFixed(4)}` : "$0"],
    ];
    if (step.kept) rows.push(["Kept", `from run #${this.rerunOf}: its recorded output, not run again`]);
    if (step.approvedBy) rows.push(["Approved by", step.approvedBy]);
    if (step.argsHash) rows.push(["Arguments hash", `${step.argsHash.slice(0, 16)}…`]);
    return h("dl", { class: "meta drawer-meta" }, rows.map(([term, value]) => [h("dt", { text: term }), h("dd", { text: value })]));
  }

  rerun() {
    const button = h("button", { type: "button", class: "secondary", id: "rerun-from", text: "Run again from here…" });
    const stepId = this.stepId;
    button.addEventListener("click", () => this.actions.onRerun(stepId));
    return h(
      "section",
      { class: "drawer-action rerun", dataset: { field: "rerun" } },
      h("h3", { text: "Run again" }),
      h("p", { class: "muted small", text: "A new run of this version from this step: it and everything downstream run again, every other step keeps the output this run recorded." }),
      button,
    );
  }

  // A ready step waits for a worker slot (FORGE_WORKER_CONCURRENCY per worker).
  slotWait() {
    return h(
      "section",
      { class: "drawer-action slot", dataset: { field: "slot-wait" } },
      h("h3", { text: "Waiting for a free worker slot" }),
      h("p", { class: "muted small", text: "Nothing else holds this step: it starts as soon as a worker has a slot free. While every slot is running another step (or no worker is running) it stays ready." }),
    );
  }

  // A ready step of an agent's run waits for the agent's call through the gateway.
  agentWait(startedBy) {
    return h(
      "section",
      { class: "drawer-action slot", dataset: { field: "agent-wait" } },
      h("h3", { text: "Waiting for the agent" }),
      h("p", { class: "muted small", text: `${startedBy}'s agent executes this step: it starts when the agent calls the step's tool through Forge's gateway with exactly the approved arguments. No worker takes it.` }),
    );
  }

  approval(step) {
    const box = h("section", { class: "drawer-action waiting", dataset: { focus: "approval" } }, h("h3", { text: "Waiting for approval" }));
    const refused = this.stale.get(this.stepId);
    if (step.previewChanged || (refused && refused !== step.previewHash)) {
      box.append(h("p", { class: "preview-changed", role: "alert", text: CHANGED_SENTENCE }));
    }
    box.append(h("p", { class: "small", text: step.error || "The plan requires a person's approval before this step runs." }));
    box.append(h("h3", { text: "What it will do" }), previewCard(step.preview));
    // Who must approve it: an approval the rules do not find enough yet is counted and
    // the step keeps waiting, so the table is asked again after each approval.
    const rules = stepRulesSection(this.api, this.runId, this.stepId);
    box.append(rules.box);
    // A call its runner will refuse is never approvable: the card says why and what to
    // change; rejecting it (which asks for a replan) is what is left.
    const cannotRun = Boolean(refusalOf(step.preview));
    if (!this.user.can_approve) {
      box.append(h("p", { class: "muted small", text: "An approver who did not write this version must approve it." }));
      return box;
    }
    if (this.user.is_version_author) {
      box.append(h("p", { class: "muted small", text: "You wrote this version: the server will refuse your decision." }));
    }
    const comment = h("textarea", { id: "approval-comment", name: "comment", rows: 3, maxlength: 10000, placeholder: "What you checked" });
    const error = h("p", { class: "error", role: "alert", hidden: true });
    const approve = cannotRun ? null : h("button", { type: "submit", value: "approve", id: "approve-step", text: "Approve" });
    const reject = h("button", { type: "submit", value: "reject", id: "reject-step", class: "danger", text: "Reject" });
    const form = h("form", { class: "approval-form", dataset: { refused: String(cannotRun) } }, h("label", { for: "approval-comment", text: "Comment" }), comment, error, h("div", { class: "buttons" }, approve, reject));
    const stepId = this.stepId;
    const shown = step.previewHash;
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const decision = event.submitter ? event.submitter.value : "approve";
      if (decision === "reject") {
        await this.act(form, error, () => this.actions.onReject(stepId, comment.value));
        return;
      }
      const approving = this.act(form, error, () => this.actions.onApprove(stepId, comment.value, shown || null), (problem) => {
        if (problem.code !== "preview_changed") return false;
        // The step shows another preview now: say so plainly and fetch it (the page
        // catches up on the events it may have missed; the drawer redraws with them).
        this.stale.set(stepId, shown);
        error.textContent = CHANGED_SENTENCE;
        if (this.actions.onStale) this.actions.onStale();
        return true;
      });
      await approving;
      rules.load();
    });
    box.append(form);
    return box;
  }

  reconcile(step) {
    const box = h("section", { class: "drawer-action reconcile", dataset: { focus: "reconcile" } }, h("h3", { text: "Needs reconciliation" }));
    box.append(h("p", { class: "small", text: step.error || "The worker stopped while this step may have had an effect. Say what really happened: nothing downstream runs until then." }));
    if (!this.user.can_reconcile) {
      box.append(h("p", { class: "muted small", text: "An operator must reconcile it." }));
      return box;
    }
    const succeeded = h("input", { type: "radio", name: "outcome", value: "succeeded", checked: true });
    const failed = h("input", { type: "radio", name: "outcome", value: "failed" });
    const output = h("textarea", { id: "reconcile-output", name: "output", rows: 4, class: "mono", placeholder: '{"committed": true}' });
    const comment = h("textarea", { id: "reconcile-comment", name: "comment", rows: 2, maxlength: 10000, placeholder: "What you checked (kept in the audit trail)" });
    const error = h("p", { class: "error", role: "alert", hidden: true });
    const form = h(
      "form",
      { class: "reconcile-form" },
      h("fieldset", { class: "outcome" }, h("legend", { text: "What happened" }), h("label", { class: "check" }, succeeded, "It succeeded"), h("label", { class: "check" }, failed, "It failed")),
      h("label", { for: "reconcile-output", text: "Output (JSON, when it succeeded)" }),
      output,
      h("label", { for: "reconcile-comment", text: "Comment" }),
      comment,
      error,
      h("div", { class: "buttons" }, h("button", { type: "submit", text: "Reconcile" })),
    );
    form.addEventListener("input", () => (error.hidden = true));
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      const outcome = succeeded.checked ? "succeeded" : "failed";
      let value = null;
      if (outcome === "succeeded" && output.value.trim()) {
        try {
          value = JSON.parse(output.value);
        } catch (problem) {
          error.textContent = `The output is not JSON: ${problem.message}`;
          error.hidden = false;
          return;
        }
      }
      await this.act(form, error, () => this.actions.onReconcile(this.stepId, outcome, value, comment.value));
    });
    box.append(form);
    return box;
  }

  // Runs `call` with the form's buttons disabled; a refusal is shown in `error`, in
  // `explain`'s words when it returns true, else as the server said it.
  async act(form, error, call, explain = () => false) {
    const buttons = [...form.querySelectorAll("button")];
    buttons.forEach((button) => (button.disabled = true));
    error.hidden = true;
    try {
      await call();
    } catch (problem) {
      if (!explain(problem)) error.textContent = describe(problem);
      error.hidden = false;
    } finally {
      buttons.forEach((button) => (button.disabled = false));
    }
  }

  async loadRecords() {
    const stepId = this.stepId;
    try {
      const records = await this.api.get(`runs/${this.runId}/records`);
      if (this.stepId !== stepId) return;
      this.records = records.filter((record) => record.step_id === stepId);
    } catch (problem) {
      if (this.stepId !== stepId) return;
      this.records = { error: describe(problem) };
    }
    this.renderRecords();
  }

  renderRecords() {
    this.renderFailedArtifacts();
    const target = this.recordsSection && this.recordsSection.querySelector(".section-body");
    if (!target || this.records === null) return;
    if (this.records.error) {
      replaceChildren(target, h("p", { class: "error", text: this.records.error }));
      return;
    }
    if (!this.records.length) {
      replaceChildren(target, h("p", { class: "muted", text: "No attempt recorded yet." }));
      return;
    }
    replaceChildren(target, h("ol", { class: "records" }, this.records.map((record) => this.record(record))));
  }

  // A failed step's artifact refs ({name, record, ...}) matched with the records' list,
  // which has the ids downloads need: by record id and name.
  renderFailedArtifacts() {
    const target = this.failedSection && this.failedSection.querySelector(".section-body");
    if (!target || this.records === null) return;
    const records = Array.isArray(this.records) ? this.records : [];
    const items = this.failedRefs.map((ref) => {
      const record = records.find((item) => String(item.id) === String(ref.record));
      const artifact = record && (record.artifacts || []).find((item) => item.name === ref.name);
      if (artifact) return this.artifact(artifact);
      return h("li", { class: "artifact" }, h("span", { text: ref.name }), h("span", { class: "muted small", text: ` ${ref.media_type} · ${size(ref.size || 0)} · not found in the run's records` }));
    });
    replaceChildren(target, h("ul", { class: "artifacts" }, items));
  }

  record(record) {
    // The tool ran (its record says succeeded) but the step's contract refused its output:
    // say it as the step's status does, so the two never read as a contradiction.
    const refused = record.status === "succeeded" && this.attemptOf && this.attemptOf.status === "invalid" && record.attempt === this.attemptOf.attempt;
    const facts = [
      `attempt ${record.attempt}`,
      refused ? "invalid: the tool ran, its output broke the contract" : record.status,
      formatDuration(record.latency_ms),
      record.exit_code === null || record.exit_code === undefined ? null : `exit ${record.exit_code}`,
      record.isolation && record.isolation !== "none" ? record.isolation : null,
    ].filter(Boolean);
    const item = h("li", { class: `record ${record.status}`, dataset: { record: record.id } }, h("div", { class: "record-head", text: facts.join(" · ") }));
    if (record.error) item.append(h("pre", { class: "json error-text", text: record.error_code ? `${record.error_code}: ${record.error}` : record.error }));
    for (const note of record.notes || []) item.append(h("p", { class: "muted small", text: note }));
    if (record.artifacts && record.artifacts.length) {
      item.append(h("ul", { class: "artifacts" }, record.artifacts.map((artifact) => this.artifact(artifact))));
    }
    return item;
  }

  artifact(artifact) {
    const url = this.api.url(`runs/${this.runId}/artifacts/${artifact.id}`);
    const link = h("a", { href: url, download: artifact.name, class: "artifact-link", text: artifact.name });
    const facts = h("span", { class: "muted small", text: ` ${artifact.media_type} · ${size(artifact.size)}${artifact.truncated ? " · truncated" : ""}` });
    const item = h("li", { class: "artifact", dataset: { artifact: String(artifact.id) } }, link, facts);
    if (artifact.size > 0 && artifact.size <= PREVIEW_LIMIT && /^(text\/|application\/(json|x-ndjson|yaml))/.test(artifact.media_type)) {
      const pre = h("pre", { class: "json log", text: "Loading…" });
      const details = h("details", { class: "preview" }, h("summary", { text: "Show" }), pre);
      details.addEventListener(
        "toggle",
        async () => {
          if (!details.open || pre.dataset.loaded) return;
          try {
            const response = await this.api.request("GET", `runs/${this.runId}/artifacts/${artifact.id}`, { raw: true });
            pre.textContent = await response.text();
            pre.dataset.loaded = "1";
          } catch (problem) {
            pre.textContent = describe(problem);
          }
        },
      );
      item.append(details);
    } else if (artifact.size === 0) {
      facts.textContent += " · empty";
    }
    return item;
  }
}

function section(title, ...content) {
  return h("section", { class: "drawer-section" }, h("h3", { text: title }), h("div", { class: "section-body" }, ...content));
}

function json(value, field) {
  return h("pre", { class: "json", dataset: { field }, text: JSON.stringify(value, null, 2) });
}

function verdictSection(verdict, doneWhen) {
  const parts = [];
  if (verdict) {
    parts.push(h("p", { class: verdict.valid ? "verdict ok" : "verdict bad", dataset: { valid: String(!!verdict.valid) }, text: verdict.valid ? "✓ The output meets the step's contract." : "✗ The output breaks the step's contract." }));
    if (Array.isArray(verdict.errors) && verdict.errors.length) {
      parts.push(h("ul", { class: "verdict-errors" }, verdict.errors.map((error) => h("li", { text: String(error) }))));
    }
  } else {
    parts.push(h("p", { class: "muted", text: "Checked when the step finishes." }));
  }
  if (doneWhen) {
    if (doneWhen.description) parts.push(h("p", { class: "small", text: doneWhen.description }));
    const rows = [];
    if (Array.isArray(doneWhen.required_keys) && doneWhen.required_keys.length) rows.push(["Required keys", doneWhen.required_keys.join(", ")]);
    // Each check with what it saw (forge.runtime.contracts: the values of its operands).
    const results = new Map(((verdict && verdict.results) || []).map((result) => [result.check, result]));
    const rowsNode = rows.map(([term, value]) => [h("dt", { text: term }), h("dd", {}, h("code", { text: value }))]);
    for (const check of doneWhen.checks || []) {
      const result = results.get(check);
      const seen = result && result.values.length ? ` with ${result.values.map(([operand, value]) => `${operand} = ${value}`).join(", ")}` : "";
      const mark = result ? (result.passed ? "✓ " : "✗ ") : "";
      rowsNode.push([
        h("dt", { text: "Check" }),
        h("dd", { class: result ? (result.passed ? "check-passed" : "check-failed") : "", dataset: { check } }, mark, h("code", { text: check }), seen),
      ]);
    }
    if (rowsNode.length) parts.push(h("dl", { class: "meta" }, rowsNode));
  }
  return section("Contract", ...parts);
}

function size(bytes) {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}
