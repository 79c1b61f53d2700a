// Words the run page puts on things: an API refusal as a sentence, a failed step's verb.
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
