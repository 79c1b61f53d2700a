// A run as the page knows it, and the one function that changes it: applyEvent. Pure: no
// DOM, no Cytoscape, no network; every function returns a new state and never changes
// its input.
//
// The page starts from the run's detail (fromDetail, whose lastSeq matches its steps)
// and folds in the run's events (applyEvent) in seq order, as the core's
// forge.runtime.state.apply_event does on the server; budget use follows the same rules
// (reserved when a step starts, settled with the real use when it ends), so the gauges
// match the server's numbers. An event at or below lastSeq is already in the state and
// changes nothing, which makes replaying an overlap after a reconnect harmless.
import { refusalOf } from "../model/preview.js";

export const FINAL_RUN_STATUSES = new Set(["succeeded", "failed", "budget_exhausted", "cancelled"]);

export const STEP_LABELS = {
  pending: "Pending",
  ready: "Ready",
  awaiting_approval: "Awaiting approval",
  running: "Running",
  succeeded: "Succeeded",
  failed: "Failed",
  invalid: "Invalid",
  reset: "Reset",
  needs_reconciliation: "Needs reconciliation",
  skipped: "Skipped",
  cancelled: "Cancelled",
};

export const RUN_LABELS = {
  queued: "Queued",
  running: "Running",
  awaiting_approval: "Awaiting approval",
  needs_replan: "Needs replan",
  succeeded: "Succeeded",
  failed: "Failed",
  budget_exhausted: "Budget exhausted",
  cancelled: "Cancelled",
};

// Events that settle a step's budget use (forge.runtime.state._SETTLES_USAGE). A step
// goes back from running to awaiting_approval when its preview changed by commit time.
const SETTLES = new Set([
  "step_awaiting_approval",
  "step_succeeded",
  "step_failed",
  "step_invalid",
  "step_retried",
  "step_reconciled",
  "step_needs_reconciliation",
]);
// Events that state how a step ended (forge.runtime.state._SETTLES_OUTCOME); a re-run's
// step_preserved keeps the output an earlier run recorded.
const OUTCOMES = new Set(["step_succeeded", "step_reconciled", "step_failed", "step_invalid", "step_preserved"]);
// Step statuses that wait for a person, and run statuses in which the run's blocked
// reason says who it waits for (forge.runtime.state, forge.runtime.waits).
const PEOPLE_WAIT = new Set(["awaiting_approval", "needs_reconciliation"]);
const WAITING_RUN = new Set(["running", "awaiting_approval"]);
// The planner's notes while a run needs a replan: they change no state on the server,
// the page shows them (replan.js).
const REPLAN_NOTES = new Set(["run_replan_started", "run_replan_proposed", "run_replan_failed", "run_replan_approved"]);
const MILESTONE_EVENTS = new Set(["milestone_reached", "milestone_reviewed"]);

// Events after which a step is no longer running: they close its timeline bar.
const ENDS = new Set([
  "step_awaiting_approval",
  "step_succeeded",
  "step_failed",
  "step_invalid",
  "step_needs_reconciliation",
  "step_reconciled",
  "step_retried",
]);

export function newStep(id, fields = {}) {
  return {
    id,
    status: "pending",
    attempt: 0,
    tool: "",
    argsHash: "",
    dependsOn: [],
    output: null,
    error: "",
    verdict: null,
    tokens: 0,
    cost: 0,
    reservedTokens: 0,
    reservedCost: 0,
    approvedBy: "",
    // The approval binds the preview the step shows while it waits (forge.runtime.state's
    // preview_hash, approved_preview); the page also keeps the preview itself to show it,
    // and whether it replaced another one (what the step will do changed meanwhile).
    preview: null,
    previewHash: "",
    previewChanged: false,
    approvedPreview: "",
    // The artifact refs ({name, media_type, size, truncated, record}) of the attempt that
    // settled the step.
    artifacts: [],
    startedAt: null,
    finishedAt: null,
    latencyMs: null,
    // Kept by a re-run from an earlier run of the same version: never ran in this one.
    kept: false,
    ...fields,
  };
}

// The page's state from the run detail of GET /api/v1/runs/{id} (plus the reservations
// of running steps, which the run page adds).
export function fromDetail(detail) {
  const steps = {};
  const order = [];
  for (const step of detail.steps || []) {
    order.push(step.step_id);
    steps[step.step_id] = newStep(step.step_id, {
      status: step.status,
      attempt: step.attempt,
      tool: step.tool || "",
      argsHash: step.args_hash || "",
      dependsOn: step.depends_on || [],
      output: step.output ?? null,
      error: step.error || "",
      verdict: step.verdict ?? null,
      tokens: step.tokens || 0,
      cost: step.cost || 0,
      reservedTokens: step.reserved_tokens || 0,
      reservedCost: step.reserved_cost || 0,
      approvedBy: step.approved_by || "",
      preview: step.preview || null,
      previewHash: (step.preview && step.preview.hash) || "",
      artifacts: [...(step.artifacts || [])],
      startedAt: step.started_at || null,
      finishedAt: step.finished_at || null,
      latencyMs: step.latency_ms ?? null,
      // A succeeded step that never started in this run was kept by a re-run.
      kept: step.status === "succeeded" && !step.attempt && detail.rerun_of != null,
    });
  }
  const budget = detail.budget || {};
  return {
    runId: detail.id,
    planId: detail.plan_id,
    planName: detail.plan_name,
    version: detail.version,
    status: detail.status,
    startedBy: detail.started_by,
    // The steps the agent that started the run executes through Forge's gateway (a run
    // started with executor "agent"): no worker takes them.
    agentSteps: [...(detail.agent_steps || [])],
    createdAt: detail.created_at,
    finishedAt: detail.finished_at || null,
    replans: detail.replans || 0,
    maxReplans: detail.max_replans ?? 3,
    lastSeq: detail.last_seq || 0,
    blockedReason: detail.blocked_reason || "",
    failedStep: detail.failed_step || null,
    failureError: detail.failed_step ? (steps[detail.failed_step] || {}).error || "" : "",
    reset: [...(detail.reset || [])],
    preserved: [...(detail.preserved || [])],
    lastResume: null,
    awaitingReview: [...(detail.awaiting_review || [])],
    rerunOf: detail.rerun_of ?? null,
    rerunSteps: [...(detail.rerun_steps || [])],
    reruns: [...(detail.reruns || [])],
    // The planner at work on a replan of this run (replan notes since it needed one).
    replan: null,
    budget: {
      usedSteps: budget.used_steps || 0,
      usedTokens: budget.used_tokens || 0,
      usedCost: budget.used_cost || 0,
      maxSteps: budget.max_steps ?? null,
      maxTokens: budget.max_tokens ?? null,
      maxCost: budget.max_cost ?? null,
    },
    order,
    steps,
  };
}

// The state after `event`. An event already folded in (seq <= lastSeq) is ignored.
// The caller hands events over in seq order (see sequence.js): this function does not
// reorder, it only refuses to apply anything twice.
export function applyEvent(state, event) {
  return applyEvents(state, [event]);
}

// The state after `events`, in the order given. The state's step map is copied once per
// call, not once per event, so catching up on thousands of events of a large plan stays
// linear; each changed step is a new object, so `state.steps[id]` changes identity
// exactly when that step changed (the drawer redraws on that).
export function applyEvents(state, events) {
  let next = null;
  let ownOrder = false;
  for (const event of events) {
    const last = next ? next.lastSeq : state.lastSeq;
    if (!event || typeof event.seq !== "number" || event.seq <= last) continue;
    if (next === null) next = { ...state, steps: { ...state.steps } };
    next.lastSeq = event.seq;
    let waitsMoved = false;
    if (event.step_id != null && event.step_status != null) {
      const known = next.steps[event.step_id];
      const step = known || newStep(event.step_id);
      const updated = applyToStep(step, event);
      next.steps[event.step_id] = updated;
      waitsMoved = PEOPLE_WAIT.has(step.status) || PEOPLE_WAIT.has(updated.status);
      if (!known) {
        if (!ownOrder) next.order = [...next.order];
        ownOrder = true;
        next.order.push(event.step_id);
      }
      next.budget = budgetAfter(next.budget, step, event);
    } else if (MILESTONE_EVENTS.has(event.event_type)) {
      const milestone = String((event.facts && event.facts.milestone) || "");
      const others = next.awaitingReview.filter((id) => id !== milestone);
      next.awaitingReview = event.event_type === "milestone_reached" ? [...others, milestone].sort() : others;
      waitsMoved = true;
    } else if (REPLAN_NOTES.has(event.event_type)) {
      next.replan = replanAfter(next.replan, event);
    } else if (event.transition) {
      const before = next;
      next.status = event.transition[1];
      next.blockedReason = event.blocked_reason || "";
      const changes = applyToRun(before, event);
      if (changes.order) ownOrder = true;
      Object.assign(next, changes);
      if (FINAL_RUN_STATUSES.has(next.status) && !next.finishedAt) next.finishedAt = event.created_at || null;
      waitsMoved = true;
    }
    if (waitsMoved && WAITING_RUN.has(next.status)) {
      const waiting = stepsWithStatus(next, "awaiting_approval");
      const refused = waiting.filter((id) => refusalOf(next.steps[id].preview));
      next.blockedReason = waitingReason(waiting.filter((id) => !refused.includes(id)), stepsWithStatus(next, "needs_reconciliation"), next.awaitingReview, refused);
    }
  }
  return next === null ? state : next;
}

// The run's blocked_reason while it waits for people, word for word as the core's
// forge.runtime.waits.waiting_reason words it (tests/fixtures/blocked_reasons.json).
const OPERATOR = "an operator";
const APPROVER = "an approver who did not write this version";
const NAMED = 5;

export function waitingReason(approvals, reconciliations, reviews, refused = []) {
  const parts = [];
  if (reconciliations.length) {
    const them = reconciliations.length === 1 ? "it may have performed its side effect" : "they may have performed their side effects";
    parts.push(`${waitSentence("step", reconciliations, "needs", "need", `reconciling by ${OPERATOR}: `)}${them}`);
  }
  if (reviews.length) parts.push(waitSentence("milestone", reviews, "waits", "wait", `for review by ${APPROVER}`));
  if (approvals.length) parts.push(waitSentence("step", approvals, "waits", "wait", `for approval by ${APPROVER}`));
  if (refused.length) {
    const one = refused.length === 1;
    parts.push(`${waitSentence("step", refused, "cannot", "cannot", "be approved: ")}${one ? "its call" : "their calls"} will be refused; ${APPROVER} may reject ${one ? "it" : "them"} to replan`);
  }
  return parts.join("; ");
}

function waitSentence(noun, ids, one, many, rest) {
  // Step ids are ASCII ([A-Za-z0-9_.-]): the default sort orders them as Python's does.
  const named = [...ids].sort().slice(0, NAMED);
  let listed = named.map((id) => `'${id}'`).join(", ");
  if (ids.length > NAMED) listed += ` and ${ids.length - NAMED} more`;
  return ids.length === 1 ? `${noun} ${listed} ${one} ${rest}` : `${noun}s ${listed} ${many} ${rest}`;
}

// What the page knows of the planner's work after a replan note: its phase ("working",
// "proposed", "failed", "approved"), the version it proposed and whom that waits for.
function replanAfter(previous, event) {
  const facts = event.facts && typeof event.facts === "object" ? event.facts : {};
  const base = { reason: event.blocked_reason || "", actor: event.actor || "", at: event.created_at || null };
  switch (event.event_type) {
    case "run_replan_started":
      return { ...base, phase: "working", planner: facts.planner || event.actor || "", onBehalfOf: facts.on_behalf_of || "" };
    case "run_replan_proposed":
      return { ...base, phase: "proposed", planner: facts.planner || event.actor || "", version: facts.version ?? null, proposal: facts.proposal ?? null, waitsFor: facts.waits_for || null };
    case "run_replan_approved":
      return { ...(previous || {}), ...base, phase: "approved", version: facts.version ?? (previous && previous.version) ?? null, approver: facts.approver || event.actor || "" };
    default:
      return { ...(previous || {}), ...base, phase: "failed", code: facts.code || "" };
  }
}

// The page's state with the replan notes it was rendered with (the events since the run
// last needed a replan, at or below its lastSeq): the run's detail does not carry them.
export function withReplanNotes(state, events) {
  let replan = state.replan;
  for (const event of events || []) if (REPLAN_NOTES.has(event.event_type)) replan = replanAfter(replan, event);
  return replan === state.replan ? state : { ...state, replan };
}

function budgetAfter(budget, step, event) {
  const tokens = event.tokens || 0;
  const cost = event.cost || 0;
  if (event.event_type === "step_started") {
    return {
      ...budget,
      usedSteps: budget.usedSteps + 1,
      usedTokens: budget.usedTokens + tokens,
      usedCost: budget.usedCost + cost,
    };
  }
  if (SETTLES.has(event.event_type)) {
    return {
      ...budget,
      usedTokens: budget.usedTokens + tokens - step.reservedTokens,
      usedCost: budget.usedCost + cost - step.reservedCost,
    };
  }
  return budget;
}

function applyToStep(step, event) {
  const kind = event.event_type;
  const status = event.step_status;
  const at = event.created_at || null;
  if (kind === "step_started") {
    return {
      ...step,
      status,
      attempt: step.attempt + 1,
      error: "",
      verdict: null,
      reservedTokens: event.tokens || 0,
      reservedCost: event.cost || 0,
      startedAt: at,
      finishedAt: null,
      latencyMs: null,
    };
  }
  let next = step;
  if (SETTLES.has(kind)) {
    next = {
      ...next,
      tokens: next.tokens + (event.tokens || 0),
      cost: next.cost + (event.cost || 0),
      reservedTokens: 0,
      reservedCost: 0,
    };
  }
  if (ENDS.has(kind) && step.status === "running") {
    next = { ...next, finishedAt: at, latencyMs: event.latency_ms ?? next.latencyMs };
  }
  if (OUTCOMES.has(kind)) {
    return {
      ...next,
      status,
      output: event.facts ?? null,
      verdict: event.verdict ?? null,
      error: event.blocked_reason || "",
      artifacts: [...(event.artifacts || [])],
      kept: kind === "step_preserved",
    };
  }
  const facts = event.facts && typeof event.facts === "object" ? event.facts : {};
  if (kind === "step_approved") {
    return { ...next, status, approvedBy: event.actor || "", approvedPreview: String(facts.preview_hash || ""), readyAt: at };
  }
  if (kind === "step_awaiting_approval") {
    // A new wait (the first, or after the preview changed) voids any earlier approval.
    const preview = facts.preview && typeof facts.preview === "object" ? facts.preview : null;
    const previewHash = preview ? String(preview.hash || "") : "";
    return {
      ...next,
      status,
      error: event.blocked_reason || "",
      approvedBy: "",
      approvedPreview: "",
      preview,
      previewHash,
      previewChanged: Boolean(next.previewHash) && previewHash !== next.previewHash,
    };
  }
  if (kind === "step_retried") {
    return { ...next, status, error: event.blocked_reason || "", artifacts: [...(event.artifacts || [])], readyAt: at };
  }
  return { ...next, status, error: event.blocked_reason || next.error, readyAt: status === "ready" ? at : next.readyAt };
}

// How long a ready step may wait before the page says it waits for a free worker slot:
// a free slot takes a ready step within a poll (a fraction of a second).
export const SLOT_WAIT_MS = 1000;

// Ready steps of a running run that have waited SLOT_WAIT_MS or more (or since before the
// page loaded) at `now`: every slot of every worker is busy, or no worker is running.
export function waitingForSlot(state, now) {
  if (state.status !== "running" && state.status !== "awaiting_approval") return [];
  const agents = new Set(state.agentSteps || []);
  return stepsWithStatus(state, "ready").filter((id) => {
    if (agents.has(id)) return false; // the agent's call, not a worker slot, starts it
    const since = state.steps[id].readyAt;
    return !since || now - Date.parse(since) >= SLOT_WAIT_MS;
  });
}

// Ready steps of a running run that wait for the agent's call through the gateway.
export function waitingForAgent(state) {
  if (state.status !== "running" && state.status !== "awaiting_approval") return [];
  const agents = new Set(state.agentSteps || []);
  return stepsWithStatus(state, "ready").filter((id) => agents.has(id));
}

function applyToRun(state, event) {
  const facts = event.facts && typeof event.facts === "object" ? event.facts : {};
  switch (event.event_type) {
    case "run_started": {
      const changes = { version: event.plan_version ?? state.version };
      if (Array.isArray(facts.steps) && state.order.length === 0) {
        changes.order = [...facts.steps];
        changes.steps = Object.fromEntries(facts.steps.map((id) => [id, newStep(id)]));
      }
      if (facts.rerun_of != null) {
        changes.rerunOf = Number(facts.rerun_of);
        changes.rerunSteps = [...((facts.rerun && facts.rerun.chosen) || [])];
      }
      return changes;
    }
    case "run_needs_replan":
      return {
        failedStep: facts.failed_step || null,
        failureError: facts.error || "",
        reset: [...(facts.reset || [])],
        preserved: [...(facts.preserved || [])],
        replan: null,
      };
    case "run_resumed": {
      const preserved = new Set(facts.preserved || []);
      const order = [...(facts.steps || [])];
      const steps = {};
      for (const id of order) {
        steps[id] = preserved.has(id) && state.steps[id] ? state.steps[id] : newStep(id);
      }
      return {
        version: event.plan_version ?? state.version,
        replans: state.replans + 1,
        order,
        steps,
        failedStep: null,
        failureError: "",
        reset: [],
        preserved: [],
        // reviews stay given (none awaiting) only for milestones kept whole; those to
        // review again are reached anew by the events that follow
        awaitingReview: [],
        replan: null,
        lastResume: {
          fromVersion: facts.from_version ?? state.version,
          version: event.plan_version ?? state.version,
          preserved: [...(facts.preserved || [])],
          reset: [...(facts.reset || [])],
          added: [...(facts.added || [])],
          removed: [...(facts.removed || [])],
          actor: event.actor || "",
        },
      };
    }
    default:
      return {};
  }
}

// --- Questions the page asks of a state ------------------------------------------------

export function isFinal(state) {
  return FINAL_RUN_STATUSES.has(state.status);
}

export function stepsWithStatus(state, ...statuses) {
  const wanted = new Set(statuses);
  return state.order.filter((id) => state.steps[id] && wanted.has(state.steps[id].status));
}

// {status: count} over the run's steps, in the order statuses are listed in STEP_LABELS.
export function statusCounts(state) {
  const counts = {};
  for (const id of state.order) {
    const status = state.steps[id] ? state.steps[id].status : "pending";
    counts[status] = (counts[status] || 0) + 1;
  }
  return Object.keys(STEP_LABELS)
    .filter((status) => counts[status])
    .map((status) => [status, counts[status]]);
}

// The budget as gauges: [{key, label, used, max, ratio}], ratio null without a limit.
export function gauges(state) {
  const { budget } = state;
  return [
    { key: "steps", label: "Steps", used: budget.usedSteps, max: budget.maxSteps },
    { key: "tokens", label: "Tokens", used: budget.usedTokens, max: budget.maxTokens },
    { key: "cost", label: "Cost", used: budget.usedCost, max: budget.maxCost },
  ].map((gauge) => ({
    ...gauge,
    ratio: gauge.max === null || gauge.max === undefined ? null : gauge.max > 0 ? Math.min(1, gauge.used / gauge.max) : 1,
  }));
}

// What the run-level comparison with a fresh fetch looks at (tests use it: the state a
// page folded from events must equal what the server says now).
export function summary(state) {
  return {
    status: state.status,
    blockedReason: state.blockedReason,
    version: state.version,
    lastSeq: state.lastSeq,
    replans: state.replans,
    failedStep: state.failedStep,
    reset: [...state.reset],
    preserved: [...state.preserved],
    budget: { usedSteps: state.budget.usedSteps, usedTokens: state.budget.usedTokens, usedCost: state.budget.usedCost },
    steps: Object.fromEntries(
      state.order.map((id) => {
        const step = state.steps[id];
        return [id, { status: step.status, attempt: step.attempt, output: step.output, error: step.error, tokens: step.tokens, cost: step.cost, approvedBy: step.approvedBy }];
      }),
    ),
  };
}
