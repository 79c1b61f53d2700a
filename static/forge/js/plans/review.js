// The review form of a version: approve or reject with a comment
// (POST /api/v1/plans/{id}/versions/{n}/approve|reject), then the page reloads to show
// the decision. The server refuses authors and versions with errors; the form says so.
import { Api, ApiError } from "../common/api.js";

export function bindReview(form, { api: root, planId, number }) {
  if (!form) return;
  const api = new Api(root);
  const error = form.querySelector("#review-error");
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const decision = event.submitter ? event.submitter.value : "approve";
    const buttons = [...form.querySelectorAll("button")];
    const before = buttons.map((button) => button.disabled);
    buttons.forEach((button) => (button.disabled = true));
    error.hidden = true;
    try {
      await api.post(`plans/${planId}/versions/${number}/${decision}`, { comment: form.elements.comment.value });
      window.location.reload();
    } catch (problem) {
      error.textContent = problem instanceof ApiError ? problem.message : "The server did not answer.";
      error.hidden = false;
      buttons.forEach((button, index) => (button.disabled = before[index]));
    }
  });
}
