// Words the run page puts on things: an API refusal as a sentence, a failed step's verb,
// whom a planner's version waits for.
import { STEP_LABELS } from "./state.js";

// An ApiError as "<detail> (<code>)", so a refusal such as 409 drift_needs_approval is
// shown as the server said it; anything else (no answer at all) as a retry hint.
export function describe(problem) {
  if (!problem) return "Something went wrong.";
  const code = problem.code && problem.code !== "error" ? ` (${problem.code})` : "";
  if (problem.status === undefined) return "The server did not answer. Try again.";
  return `${problem.message}${code}`;
}

export function failureVerb(step) {
  if (!step) return "failed";
  if (step.status === "invalid") return "broke its contract";
  if (step.status === "failed") return "failed";
  return STEP_LABELS[step.status].toLowerCase();
}

// Whom a planner's version waits for, from its proposal's note (waits_for).
export function waitsForSentence(replan) {
  const waits = replan.waitsFor || {};
  if (waits.who === "policy") return "a read-only replan that keeps every constraint, which the policy approves: the run resumes on it at once.";
  if (waits.who === "nobody") return `it cannot resume the run: ${(waits.why || []).join("; ")}. An author fixes it in a new version.`;
  const names = [...(waits.approvers || [])];
  if (waits.more) names.push(`${waits.more} more`);
  const who = names.length ? ` (${names.join(", ")})` : "";
  const author = waits.author ? ` other than its author, ${waits.author}` : "";
  return `it waits for approval by an approver${author}${who}; the run resumes on it once approved.`;
}
