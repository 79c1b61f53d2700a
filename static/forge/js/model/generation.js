// "New plan from a goal" while the planner works: what the page shows of a proposal as
// GET /api/v1/plans/proposals/{id} answers it, and what it does next. Pure: no DOM.

export const FINISHED = new Set(["proposed", "does_not_compile", "failed", "cancelled"]);

// "7 s", "2 min 05 s"
export function elapsedText(seconds) {
  const whole = Math.max(0, Math.floor(Number(seconds) || 0));
  if (whole < 60) return `${whole} s`;
  return `${Math.floor(whole / 60)} min ${String(whole % 60).padStart(2, "0")} s`;
}

// Seconds since it was asked, now: the server's count when the proposal was read, plus
// the time since on this clock (so the count moves between polls), frozen once finished.
export function elapsedNow(proposal, readAtMs, nowMs) {
  const counted = Number(proposal.elapsed_seconds) || 0;
  if (FINISHED.has(proposal.status)) return counted;
  return counted + Math.max(0, nowMs - readAtMs) / 1000;
}

const capitalised = (text) => (text ? text[0].toUpperCase() + text.slice(1) : "");

// {next, line, url}: next is "poll" (keep watching), "open" (the editor on the draft at
// url), "failed" (no plan: keep the form) or "cancelled".
export function nextStep(proposal) {
  switch (proposal.status) {
    case "proposed":
    case "does_not_compile":
      if (proposal.editor) return { next: "open", line: "Opening your draft in the editor…", url: proposal.editor };
      return { next: "poll", line: "Saving your draft…" };
    case "failed":
      return { next: "failed", line: capitalised(proposal.progress) };
    case "cancelled":
      return { next: "cancelled", line: "Cancelled: the planner was stopped and no plan was saved." };
    default:
      return { next: "poll", line: `${capitalised(proposal.progress)}…` };
  }
}

// One line per attempt so far: "Attempt 1: sent back: [cycle] dependency cycle: a -> b".
export function attemptLines(proposal) {
  return (proposal.attempts || []).map((attempt) => ({
    code: attempt.code,
    text: `Attempt ${attempt.number}: ${attempt.code ? `sent back: ${(attempt.problems || [])[0] || attempt.code}` : "compiles"}`,
  }));
}
