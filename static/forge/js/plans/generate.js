// New plan from a goal: POST /api/v1/plans/generate, then the editor on version 1 (its
// diagnostics painted there). A planner that gave no plan leaves the form as it was,
// with the error's code and each attempt's problems, so nothing typed is lost.
import { Api, ApiError } from "../common/api.js";
import { h } from "../common/dom.js";
import { readInitialData } from "../common/initial-data.js";

const $ = (id) => document.getElementById(id);
const data = readInitialData("generate-data");
const api = new Api(data.api);
const form = $("generate-plan");
const status = $("generate-status");
const failure = $("generate-error");

function showFailure(error, proposal) {
  const attempts = (proposal && proposal.attempts) || [];
  failure.replaceChildren(
    h("p", {}, h("strong", {}, "The planner proposed no plan: "), error.message, " ", h("code", { dataset: { code: error.code } }, error.code)),
    attempts.length
      ? h("ol", { class: "attempts" }, attempts.map((attempt) =>
          h("li", { dataset: { code: attempt.code } }, `Attempt ${attempt.number}: ${attempt.problems.join("; ") || attempt.code}`)))
      : null,
  );
  failure.hidden = false;
}

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  failure.hidden = true;
  const goal = $("goal").value.trim();
  if (!goal) {
    showFailure(new ApiError(400, { detail: "Write the goal first.", code: "missing_goal" }), null);
    return;
  }
  const button = $("generate-button");
  button.disabled = true;
  status.textContent = "Asking the planner…";
  form.dataset.state = "asking";
  try {
    const answer = await api.post("plans/generate", {
      goal,
      context: $("context").value,
      constraints: $("constraints").value,
      name: $("plan-name").value.trim(),
    });
    status.textContent = "Opening the editor…";
    window.location.assign(answer.editor);
  } catch (error) {
    let proposal = null;
    if (error instanceof ApiError && error.body.proposal) {
      try {
        proposal = await api.get(`plans/proposals/${error.body.proposal}`);
      } catch {
        proposal = null;
      }
    }
    showFailure(error instanceof ApiError ? error : new ApiError(0, { detail: "the server did not answer", code: "unreachable" }), proposal);
    status.textContent = "";
    form.dataset.state = "failed";
    button.disabled = false;
  }
});
form.dataset.state = "ready";
