// The replan panel, shown while the run needs a replan: what failed and why, which steps
// start over and which keep their results (also highlighted on the graph), a link to the
// editor to save a fixed version, and "Resume with version N" over the plan's versions
// newer than the run's (GET /plans/{id}/versions), which POSTs /runs/{id}/resume. The
// server decides (the approval gate): a version with errors, one no person other than
// its author approved (409 needs_person, unless the policy continues a read-only
// replan), or one that drops a constraint (409 drift_needs_approval) is refused, and the
// refusal is shown as it came. Each version says beforehand whether it can resume: an
// approved one can (the API refuses authors their own approvals, so "approved" means a
// person other than its author, or the policy, approved it); any other waits for one.
//
// A plan that replans automatically has the planner at work meanwhile: the panel follows
// its notes live (state.replan: working, proposed with whom the version waits for,
// approved, failed), and a proposed or approved version reloads the list at once, so
// it never says "no version newer" about a version the planner just saved.
import { h, replaceChildren } from "../common/dom.js";
import { describe, failureVerb, waitsForSentence } from "./words.js";

// Whether `version` (a summary from GET /plans/{id}/versions) can resume the run now, and
// the words that say so. `policy` is the deployment's auto_approve_replans setting.
export function resumability(version, policy = "never") {
  if (version.has_errors) return { ok: false, mark: "cannot resume", why: `v${version.number} has compile errors.` };
  if (version.status === "superseded") {
    return { ok: false, mark: "cannot resume", why: `v${version.number} was superseded by v${version.superseded_by}: it can never run; resume on a newer version.` };
  }
  if (version.status === "approved") {
    return { ok: true, mark: "can resume", why: `v${version.number} is approved by someone other than its author: it can resume the run.` };
  }
  const person = `v${version.number} is ${VERSION_LABELS[version.status] || version.status}: a person other than its author (${version.author}) must approve it before the run can resume on it.`;
  if (policy === "read_only" && !["rejected", "changes_requested"].includes(version.status)) {
    return { ok: false, mark: "needs a person, or the policy", why: `${person} Unless it is a read-only replan that keeps every constraint: then the policy approves it when you resume.` };
  }
  return { ok: false, mark: "needs a person", why: person };
}

const VERSION_LABELS = {
  draft: "draft",
  awaiting_approval: "awaiting approval",
  approved: "approved",
  rejected: "rejected",
  changes_requested: "changes requested",
  superseded: "superseded",
  has_errors: "has errors",
};

export class ReplanPanel {
  // Its step chips carry data-open-step; the page's click handler (panels.js) opens them.
  constructor(section, { api, user, urls, policy, onResume }) {
    this.section = section;
    this.api = api;
    this.user = user;
    this.urls = urls;
    this.policy = (policy && policy.auto_approve_replans) || "never";
    this.onResume = onResume;
    this.planner = section.querySelector("#replan-planner");
    this.noted = null; // the planner's note the version list was last loaded for
    this.failure = section.querySelector("#replan-failure");
    this.sets = section.querySelector("#replan-sets");
    this.editLink = section.querySelector("#replan-edit");
    this.form = section.querySelector("#resume-form");
    this.select = section.querySelector("#resume-version");
    this.refresh = section.querySelector("#resume-refresh");
    this.hint = section.querySelector("#resume-hint");
    this.error = section.querySelector("#resume-error");
    this.replans = section.querySelector("#replan-count");
    this.key = null;
    this.versions = [];
    this.loading = null;
    if (this.form) {
      this.refresh.addEventListener("click", () => this.loadVersions());
      this.select.addEventListener("focus", () => this.loadVersions({ quiet: true }));
      this.select.addEventListener("change", () => this.explain());
      this.form.addEventListener("submit", (event) => this.submit(event));
    }
    window.addEventListener("focus", () => {
      if (!this.section.hidden) this.loadVersions({ quiet: true });
    });
  }

  render(state) {
    // A run that exhausted its budget resumes the same way, on a new version (a larger
    // budget is drift: a person approves it first).
    const exhausted = state.status === "budget_exhausted";
    const show = state.status === "needs_replan" || exhausted;
    this.section.hidden = !show;
    if (!show) {
      this.key = null;
      return;
    }
    const key = `${state.lastSeq}`;
    if (this.key === key) return;
    const first = this.key === null;
    this.key = key;
    this.state = state;
    this.renderPlanner(state.replan);
    const noted = state.replan && state.replan.version ? `${state.replan.phase}:${state.replan.version}` : null;
    const newVersion = noted !== null && noted !== this.noted && !first;
    this.noted = noted;
    const title = this.section.querySelector("#replan-title");
    if (title) title.textContent = exhausted ? "Budget exhausted" : "Needs a replan";
    if (exhausted) {
      replaceChildren(
        this.failure,
        h("p", { class: "failure-reason", text: state.blockedReason || "The run's budget is exhausted." }),
        h("p", { class: "muted small", text: "Steps that never started were cancelled. A new version with a larger budget needs a person's approval before the run resumes on it." }),
      );
      replaceChildren(this.sets);
      this.replans.textContent = `Replans used: ${state.replans} of ${state.maxReplans}.`;
      if (this.editLink) this.editLink.href = `${this.urls.edit}?version=${state.version}&from_run=${state.runId}`;
      if (first && this.form) this.loadVersions({ quiet: true });
      else if (this.form) this.fillVersions();
      return;
    }
    const failed = state.steps[state.failedStep];
    const verdict = failed && failed.verdict;
    const failure = [
      h("p", {}, "Step ", h("button", { type: "button", class: "link step-link", dataset: { openStep: state.failedStep || "" }, text: state.failedStep || "?" }), ` ${failureVerb(failed)}.`),
    ];
    const reason = state.failureError || (failed && failed.error);
    if (reason) failure.push(h("p", { class: "failure-reason", text: reason }));
    if (verdict && Array.isArray(verdict.checks) && verdict.checks.length) {
      failure.push(h("p", { class: "muted small" }, "Contract: ", verdict.checks.map((check, index) => [index ? ", " : "", h("code", { text: check })])));
    }
    replaceChildren(this.failure, failure);
    replaceChildren(
      this.sets,
      setList("Start over (reset)", state.reset, "reset"),
      setList("Keep their results (preserved)", state.preserved, "preserved"),
    );
    this.replans.textContent = `Replans used: ${state.replans} of ${state.maxReplans}.`;
    if (this.editLink) {
      this.editLink.href = `${this.urls.edit}?version=${state.version}&from_run=${state.runId}`;
    }
    if ((first || newVersion) && this.form) this.loadVersions({ quiet: true });
    else if (this.form) this.fillVersions();
  }

  // Where the planner is: working, proposed vN (linked) and whom it waits for, approved,
  // or gave no version.
  renderPlanner(replan) {
    if (!this.planner) return;
    this.planner.hidden = !replan;
    if (!replan) return;
    this.planner.dataset.phase = replan.phase;
    const version = (number) => h("a", { class: "version", href: this.urls.version.replace("{n}", String(number)), text: `v${number}` });
    const parts = [];
    if (replan.phase === "working") {
      parts.push(h("p", {}, h("span", { class: "spinner", "aria-hidden": "true" }), `The planner ${replan.planner} is working on a new version${replan.onBehalfOf ? ` for ${replan.onBehalfOf}` : ""}…`));
    } else if (replan.phase === "proposed") {
      parts.push(h("p", {}, `The planner ${replan.planner} proposed `, version(replan.version), `: ${waitsForSentence(replan)}`));
      const why = (replan.waitsFor && replan.waitsFor.who === "approvers" && replan.waitsFor.why) || [];
      if (why.length) parts.push(h("ul", { class: "muted small planner-why" }, why.map((reason) => h("li", { text: reason }))));
    } else if (replan.phase === "approved") {
      parts.push(h("p", {}, `${replan.approver} approved `, version(replan.version), ": the run resumes on it…"));
    } else {
      parts.push(h("p", { text: `The planner proposed no version: ${replan.reason}` }));
    }
    replaceChildren(this.planner, parts);
  }

  async loadVersions({ quiet = false } = {}) {
    if (!this.form || this.loading) return this.loading;
    if (!quiet) this.hint.textContent = "Loading versions…";
    this.loading = this.api
      .get(`plans/${this.state.planId}/versions`)
      .then((page) => {
        this.versions = page.items || [];
        this.fillVersions();
      })
      .catch((problem) => {
        this.hint.textContent = `Could not load the plan's versions: ${problem.message}`;
      })
      .finally(() => {
        this.loading = null;
      });
    return this.loading;
  }

  fillVersions() {
    const current = this.state.version;
    const newer = this.versions.filter((version) => version.number > current).sort((a, b) => b.number - a.number);
    const chosen = this.select.value;
    const options = newer.map((version) => {
      const can = resumability(version, this.policy);
      // The mark first: a narrow list cuts the end of a long label.
      const status = VERSION_LABELS[version.status] || version.status;
      const label = [`v${version.number}`, can.mark, status, `by ${version.author}`, version.note ? truncate(version.note, 40) : ""].filter(Boolean).join(" · ");
      return h("option", { value: String(version.number), disabled: version.has_errors || undefined, dataset: { resumable: can.ok ? "yes" : "no" }, text: `${can.ok ? "✓" : "✗"} ${label}` });
    });
    if (!options.length) options.push(h("option", { value: "", text: `No version newer than v${current} yet` }));
    replaceChildren(this.select, options);
    const usable = newer.filter((version) => !version.has_errors);
    if (chosen && usable.some((version) => String(version.number) === chosen)) this.select.value = chosen;
    else if (usable.length) this.select.value = String(usable[0].number);
    this.form.querySelector("button[type=submit]").disabled = !usable.length;
    this.explain();
  }

  // The hint under the list: whether the chosen version can resume, and why.
  explain() {
    const current = this.state.version;
    const chosen = this.versions.find((version) => String(version.number) === this.select.value);
    this.hint.dataset.resumable = chosen ? (resumability(chosen, this.policy).ok ? "yes" : "no") : "";
    this.hint.textContent = chosen
      ? `${resumability(chosen, this.policy).why} A version that drops a constraint of v${current} always waits for a person.`
      : `Save a fixed version in the editor, then refresh this list.`;
  }

  async submit(event) {
    event.preventDefault();
    const number = Number(this.select.value);
    if (!number) return;
    const button = this.form.querySelector("button[type=submit]");
    button.disabled = true;
    this.error.hidden = true;
    try {
      await this.onResume(number);
    } catch (problem) {
      this.error.textContent = describe(problem);
      this.error.hidden = false;
    } finally {
      button.disabled = false;
    }
  }
}

function setList(title, ids, kind) {
  return h(
    "div",
    { class: `step-set ${kind}`, dataset: { set: kind } },
    h("h3", { text: title }),
    ids.length
      ? h("ul", { class: "chips-inline" }, ids.map((id) => h("li", {}, h("button", { type: "button", class: `step-chip ${kind}`, dataset: { openStep: id }, text: id }))))
      : h("p", { class: "muted small", text: "none" }),
  );
}

function truncate(text, size) {
  const flat = String(text).replace(/\s+/g, " ").trim();
  return flat.length > size ? `${flat.slice(0, size - 1)}…` : flat;
}
