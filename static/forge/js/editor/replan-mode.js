// The editor's replan mode, when it was opened from a run that needs a replan
// (/plans/{id}/edit/?version=N&from_run=RUN; the run page's replan panel links there).
// Saving then goes through the run, POST /runs/{RUN}/replans, which makes the new version
// a replan of the run's current version carrying the side effects the run already
// performed (the compiler warns repeats_side_effect where it would repeat one); the
// answer names the version, whose full form (GET /plans/{id}/versions/{n}) the store
// takes. The banner says what saving does, checks the run (GET /runs/{RUN}: a run of
// this plan, still waiting for a replan), and after a save says what happens next and
// links back to the run.
import { ApiError } from "../common/api.js";

export class ReplanMode {
  // replan: the page data's {run, from_version, endpoint, run_url}, or null (no banner).
  constructor(banner, { api, planId, replan }) {
    this.banner = banner;
    this.api = api;
    this.planId = planId;
    this.replan = replan;
    this.state = banner ? banner.querySelector("#replan-state") : null;
    this.active = Boolean(replan && banner);
    this.run = null;
  }

  // Whether saving goes through the run (the run exists and belongs to this plan).
  get enabled() {
    return this.active;
  }

  async check() {
    if (!this.active) return;
    const { run: runId, from_version: from } = this.replan;
    try {
      this.run = await this.api.get(`runs/${runId}`);
    } catch (problem) {
      const missing = problem instanceof ApiError && problem.status === 404;
      this.disable(missing ? `Run #${runId} was not found: saving makes an ordinary new version.` : `Could not read run #${runId}: ${problem.message}`);
      return;
    }
    if (this.run.plan_id !== this.planId) {
      this.disable(`Run #${runId} is a run of another plan: saving makes an ordinary new version of this one.`);
      return;
    }
    const notes = [];
    if (this.run.status !== "needs_replan") notes.push(`Run #${runId} does not wait for a replan now (it is ${this.run.status.replaceAll("_", " ")}).`);
    if (this.run.version !== from) notes.push(`The run is on v${this.run.version} now: the replan's parent will be v${this.run.version}, not v${from}.`);
    this.say(notes.join(" "), "ready");
  }

  // Saves `document` as a replan of the run; resolves with the new version in full.
  async save(document, { note = "", replanReason = "" } = {}) {
    const saved = await this.api.post(this.replan.endpoint, { document, note, replan_reason: replanReason });
    const version = await this.api.get(`plans/${this.planId}/versions/${saved.number}`);
    this.saved(saved);
    return version;
  }

  saved(answer) {
    const carried = answer.performed_side_effects.length;
    const repeats = answer.diagnostics.filter((item) => item.code === "repeats_side_effect").length;
    const parts = [
      `Saved v${answer.number} as a replan of run #${this.replan.run} from v${answer.parent}`,
      carried
        ? `, carrying ${carried} side effect${carried === 1 ? "" : "s"} already performed`
        : " (no side effect performed so far that it could repeat)",
      repeats ? `; ${repeats} repeats_side_effect warning${repeats === 1 ? "" : "s"}: see Problems.` : ".",
      ` It waits for a person other than you to approve it; then an operator resumes the run on it.`,
    ];
    this.say(parts.join(""), "saved");
  }

  disable(message) {
    this.active = false;
    this.say(message, "invalid");
  }

  say(message, state) {
    this.banner.dataset.state = state;
    this.state.textContent = message;
  }
}
