// One waiting item's decision: approve or reject with a comment, by POSTing
// `<endpoint>/approve` or `<endpoint>/reject` ({"comment"}), the same operations the
// version and run pages use. A step's approval also posts the hash of the preview shown
// (the form's data-preview-hash), so it approves exactly what the reviewer read. The
// server checks again who may decide (never the version's author) and whether the item
// still waits; its refusal is shown as it came, or in `onRefused`'s words when it takes
// the refusal (returns a sentence), and the form is usable again. On success
// `onDecided(decision, answer)` takes the item away (`answer`: the server's).
import { ApiError } from "../common/api.js";

// Refusals that mean the item changed since the page was drawn (someone decided first,
// the run moved on): the queue is out of date, so say how to bring it up to date.
const STALE = new Set([400, 404, 409]);

export function describeProblem(problem) {
  if (problem instanceof ApiError) {
    const code = problem.code && problem.code !== "error" ? ` (${problem.code})` : "";
    const hint = STALE.has(problem.status) ? " It may have been decided already: refresh the queue." : "";
    return `${problem.message}${code}.${hint}`;
  }
  return "The server did not answer. Try again.";
}

export function bindDecision(form, { api, onDecided, onRefused = async () => null }) {
  const error = form.querySelector(".decision-error");
  const buttons = [...form.querySelectorAll("button[type=submit]")];
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const decision = (event.submitter && event.submitter.dataset.decision) || "approve";
    buttons.forEach((button) => (button.disabled = true));
    error.hidden = true;
    form.dataset.state = "sending";
    try {
      const body = { comment: form.elements.comment.value };
      if (decision === "approve" && form.dataset.previewHash) body.preview_hash = form.dataset.previewHash;
      const answer = await api.post(`${form.dataset.endpoint}/${decision}`, body);
      form.dataset.state = "done";
      onDecided(decision, answer);
    } catch (problem) {
      form.dataset.state = "refused";
      let sentence = null;
      try {
        sentence = await onRefused(problem);
      } catch {
        sentence = null;
      }
      error.textContent = sentence || describeProblem(problem);
      error.hidden = false;
      buttons.forEach((button) => (button.disabled = false));
    }
  });
}
