// The parts of the run page around the graph: the header (status, version, live state,
// duration, cancel), the banner that says what the run waits for (the run's own
// blocked_reason: each step or milestone waiting and the role that can act; a milestone
// by its title, linked to where it is reviewed; while it needs a replan, where the
// planner is), the budget gauges, the step counts, and the list of what needs a person
// (a waiting step with what it will do: its preview's kind and summary, a warning when it
// has none; a step to reconcile; a milestone to review). Built with dom.js's h(): every
// text goes in as text.
import { h, replaceChildren } from "../common/dom.js";
import { CHANGED_SENTENCE, isWarning, previewLabel, refusalOf } from "../model/preview.js";
import { RUN_LABELS, STEP_LABELS, gauges, isFinal, statusCounts, stepsWithStatus, waitingForAgent, waitingForSlot } from "./state.js";
import { formatDuration } from "./timeline.js";
import { describe, failureVerb, waitsForSentence } from "./words.js";

const LIVE_LABELS = {
  connecting: "Connecting…",
  live: "Live",
  reconnecting: "Reconnecting…",
  refused: "Not allowed to follow this run",
  stopped: "Finished: up to date",
  offline: "Offline",
};

export class Panels {
  constructor({ root, user, urls, onOpenStep, onCancel }) {
    this.root = root;
    this.user = user;
    this.urls = urls;
    this.badge = document.getElementById("run-status");
    this.versionLink = document.getElementById("version-link");
    this.live = document.getElementById("live-state");
    this.duration = document.getElementById("run-duration");
    this.banner = document.getElementById("attention");
    this.budget = document.getElementById("budget");
    this.counts = document.getElementById("step-counts");
    this.slotWait = document.getElementById("slot-wait");
    this.people = document.getElementById("people-panel");
    this.peopleList = document.getElementById("people-list");
    this.cancel = document.getElementById("cancel-button");
    this.cancelError = document.getElementById("cancel-error");
    this.onOpenStep = onOpenStep;
    this.confirming = null;
    this.root.addEventListener("click", (event) => {
      const opener = event.target.closest("[data-open-step]");
      if (opener) onOpenStep(opener.dataset.openStep, opener.dataset.focus || "");
    });
    if (this.cancel) {
      this.cancel.addEventListener("click", async () => {
        // Two clicks: the first asks, the second cancels (no blocking confirm()).
        if (!this.confirming) {
          this.cancel.textContent = "Really cancel?";
          this.cancel.classList.add("confirming");
          this.confirming = setTimeout(() => this.resetCancel(), 4000);
          return;
        }
        this.resetCancel();
        this.cancel.disabled = true;
        this.cancelError.hidden = true;
        try {
          await onCancel();
        } catch (problem) {
          this.cancelError.textContent = describe(problem);
          this.cancelError.hidden = false;
        } finally {
          this.cancel.disabled = false;
        }
      });
    }
  }

  resetCancel() {
    clearTimeout(this.confirming);
    this.confirming = null;
    this.cancel.textContent = "Cancel run";
    this.cancel.classList.remove("confirming");
  }

  setLive(status) {
    this.live.dataset.state = status;
    this.live.textContent = LIVE_LABELS[status] || status;
  }

  tick(state, now) {
    const start = Date.parse(state.createdAt);
    const end = state.finishedAt ? Date.parse(state.finishedAt) : now;
    this.duration.textContent = formatDuration(end - start);
    this.renderSlotWait(state, now);
  }

  // Ready steps that a free worker slot has not taken for a while say why they wait, and
  // so do the steps that wait for the agent's call through the gateway.
  renderSlotWait(state, now) {
    const waiting = waitingForSlot(state, now);
    const agent = waitingForAgent(state);
    this.slotWait.hidden = !waiting.length && !agent.length;
    const named = (ids) => (ids.length > 3 ? `${ids.slice(0, 3).join(", ")} and ${ids.length - 3} more` : ids.join(", "));
    const verb = (ids) => (ids.length === 1 ? "is ready and waits" : "are ready and wait");
    const parts = [];
    if (waiting.length) {
      parts.push(
        h("strong", { text: "Waiting for a free worker slot: " }),
        `${named(waiting)} ${verb(waiting)} until a worker has a slot free. Every slot is running another step, or no worker is running. `,
      );
    }
    if (agent.length) {
      parts.push(
        h("strong", { text: "Waiting for the agent: " }),
        `${named(agent)} ${verb(agent)} for the call of ${state.startedBy}'s agent through Forge's gateway, with the step's approved arguments.`,
      );
    }
    if (parts.length) replaceChildren(this.slotWait, ...parts);
  }

  render(state, now, doc = null) {
    this.doc = doc;
    this.root.dataset.status = state.status;
    this.badge.dataset.status = state.status;
    this.badge.textContent = RUN_LABELS[state.status] || state.status;
    this.versionLink.textContent = `v${state.version}`;
    this.versionLink.href = this.urls.version.replace("{n}", String(state.version));
    if (this.cancel) this.cancel.hidden = !this.user.can_cancel || isFinal(state);
    this.tick(state, now);
    this.renderBanner(state);
    this.renderBudget(state);
    this.renderCounts(state);
    this.renderPeople(state);
  }

  renderBanner(state) {
    const { banner } = this;
    const parts = bannerFor(state);
    banner.hidden = !parts;
    if (!parts) return;
    banner.dataset.kind = parts.kind;
    // A milestone is named by its title, with a link to where it is reviewed.
    const milestones = parts.kind === "waiting" || parts.kind === "reconcile" ? state.awaitingReview : [];
    replaceChildren(
      banner,
      h("strong", { text: parts.title }),
      parts.body ? h("span", { class: "banner-body", text: ` ${parts.body}` }) : null,
      milestones.map((id) =>
        h(
          "span",
          { class: "banner-milestone", dataset: { milestone: id } },
          ` Waits for milestone review: ${this.milestoneTitle(id)} — `,
          h("a", { href: this.milestoneUrl(id), text: "review it" }),
          ".",
        ),
      ),
    );
  }

  milestoneTitle(id) {
    const found = ((this.doc && this.doc.milestones) || []).find((milestone) => milestone.id === id);
    return (found && found.title) || id;
  }

  milestoneUrl(id) {
    return this.urls.milestone.replace("{m}", encodeURIComponent(id));
  }

  renderBudget(state) {
    const rows = gauges(state).map((gauge) => {
      const used = format(gauge.key, gauge.used);
      const text = gauge.max === null || gauge.max === undefined ? `${used} · no limit` : `${used} of ${format(gauge.key, gauge.max)}`;
      const item = h("div", { class: "gauge", dataset: { gauge: gauge.key } }, h("div", { class: "gauge-head" }, h("span", { text: gauge.label }), h("span", { class: "gauge-value", text })));
      if (gauge.ratio !== null) {
        const meter = h("meter", { min: 0, max: 1, low: 0.7, high: 0.9, optimum: 0, value: gauge.ratio.toFixed(4), "aria-label": `${gauge.label}: ${text}` });
        item.append(meter);
      } else {
        item.append(h("div", { class: "gauge-none" }));
      }
      return item;
    });
    replaceChildren(this.budget, rows);
  }

  renderCounts(state) {
    const items = statusCounts(state).map(([status, count]) =>
      h("li", { class: "chip-status", dataset: { status } }, h("span", { class: "dot" }), `${count} ${STEP_LABELS[status].toLowerCase()}`),
    );
    replaceChildren(this.counts, items);
  }

  // What waits for a person: reconciliations, milestone reviews and approvals.
  renderPeople(state) {
    const waiting = stepsWithStatus(state, "awaiting_approval");
    const interrupted = stepsWithStatus(state, "needs_reconciliation");
    const reviews = isFinal(state) ? [] : state.awaitingReview;
    this.people.hidden = !waiting.length && !interrupted.length && !reviews.length;
    const items = [];
    for (const id of reviews) {
      items.push(
        h(
          "li",
          { class: "person-item", dataset: { milestone: id, kind: "review" } },
          h("div", {}, h("strong", { text: this.milestoneTitle(id) }), " ", h("span", { class: "status-pill", dataset: { status: "awaiting_approval" }, text: "Milestone review" })),
          h("div", { class: "muted small", text: `Milestone ${id} waits for review by an approver who did not write this version: the facts its steps produced are looked at before the run goes on.` }),
          h("a", { class: "button secondary small", href: this.milestoneUrl(id), text: "Review the milestone…" }),
        ),
      );
    }
    for (const id of waiting) {
      const step = state.steps[id];
      const refusal = refusalOf(step.preview);
      items.push(
        h(
          "li",
          { class: "person-item", dataset: { step: id, kind: "approval" } },
          h("div", {}, h("strong", { text: id }), " ", h("span", { class: "status-pill", dataset: { status: step.status }, text: STEP_LABELS[step.status] })),
          step.previewChanged ? h("div", { class: "preview-changed small", text: CHANGED_SENTENCE }) : null,
          step.preview
            ? h(
                "div",
                { class: `person-preview small${isWarning(step.preview) || refusal ? " warning" : ""}`, dataset: { kind: step.preview.kind } },
                h("span", { class: "preview-kind", text: previewLabel(step.preview) }),
                " ",
                h("span", { class: "preview-summary", text: step.preview.summary || "" }),
              )
            : null,
          refusal ? h("div", { class: "preview-refused small", dataset: { code: refusal.code }, text: `It will be refused: ${refusal.reason}. It cannot be approved.` }) : null,
          step.error ? h("div", { class: "muted small", text: step.error }) : null,
          h("button", { type: "button", class: "secondary small", dataset: { openStep: id, focus: "approval" }, text: refusal ? "See what to change…" : this.user.can_approve ? "Review the preview…" : "Details" }),
        ),
      );
    }
    for (const id of interrupted) {
      items.push(
        h(
          "li",
          { class: "person-item", dataset: { step: id, kind: "reconcile" } },
          h("div", {}, h("strong", { text: id }), " ", h("span", { class: "status-pill", dataset: { status: "needs_reconciliation" }, text: STEP_LABELS.needs_reconciliation })),
          h("div", { class: "muted small", text: "Needs reconciling by an operator: interrupted while it may have had its effect. Say what happened." }),
          h("button", { type: "button", class: "secondary small", dataset: { openStep: id, focus: "reconcile" }, text: this.user.can_reconcile ? "Reconcile…" : "Details" }),
        ),
      );
    }
    replaceChildren(this.peopleList, items);
  }
}

function bannerFor(state) {
  const interrupted = stepsWithStatus(state, "needs_reconciliation");
  switch (state.status) {
    case "needs_replan":
      return {
        kind: "replan",
        title: `Needs a replan: step ${state.failedStep || "?"} ${failureVerb(state.steps[state.failedStep])}.`,
        body: replanSentence(state.replan),
      };
    case "succeeded": {
      const resumed = state.lastResume ? ` ${resumeSentence(state.lastResume)}` : "";
      const done = state.order.length === 1 ? "Its one step is done." : `All ${state.order.length} steps are done.`;
      return { kind: "ok", title: "Succeeded.", body: `${done}${resumed}` };
    }
    case "failed":
    case "budget_exhausted":
    case "cancelled":
      return { kind: state.status === "cancelled" ? "muted" : "error", title: `${RUN_LABELS[state.status]}.`, body: sentence(state.blockedReason) };
    default:
      // Running or awaiting approval: the run's reason names whatever waits for a person
      // and who can act (the same words as the API's blocked_reason).
      if (state.blockedReason) {
        return { kind: interrupted.length ? "reconcile" : "waiting", title: "Waiting for a person:", body: sentence(state.blockedReason) };
      }
      if (state.lastResume) return { kind: "info", title: resumeSentence(state.lastResume), body: "" };
      return null;
  }
}

// Where the planner is while the run needs a replan (a plan that replans automatically),
// or what a person does when no planner works on it.
function replanSentence(replan) {
  const person = "Save a fixed version of the plan, then resume the run on it. Steps that succeeded keep their results.";
  if (!replan) return person;
  switch (replan.phase) {
    case "working":
      return `The planner ${replan.planner} is working on a fixed version.`;
    case "proposed":
      return `The planner proposed v${replan.version}: ${waitsForSentence(replan)}`;
    case "approved":
      return `${replan.approver} approved v${replan.version}: the run resumes on it.`;
    default:
      return `The planner proposed no version (${replan.reason}). ${person}`;
  }
}

function sentence(text) {
  const flat = String(text || "").trim();
  if (!flat) return "";
  const capital = flat[0].toUpperCase() + flat.slice(1);
  return /[.!?]$/.test(capital) ? capital : `${capital}.`;
}

function resumeSentence(resume) {
  const kept = resume.preserved;
  const by = resume.actor ? ` by ${resume.actor === "policy" ? "the policy" : resume.actor}` : "";
  return kept.length
    ? `Resumed on v${resume.version}${by}, keeping the results of ${kept.join(", ")}.`
    : `Resumed on v${resume.version}${by}; every step started over.`;
}

function format(key, value) {
  if (key === "cost") {
    const amount = Number(value || 0);
    return amount === 0 ? "$0" : `$${amount.toFixed(amount >= 1 ? 2 : 4)}`;
  }
  return Number(value || 0).toLocaleString("en");
}
