// New plan from a goal: POST /api/v1/plans/generate answers at once with the proposal a
// worker works on; the page follows it (GET /plans/proposals/{id}, every second) showing
// the time since it was asked, the attempt and why the last answer went back, with a
// Cancel that stops the planner (POST /plans/proposals/{id}/cancel). A saved draft opens
// in the editor; a planner that gave no plan, or a cancel, leaves the form as it was, so
// nothing typed is lost. The words come from model/generation.js.
import { Api, ApiError } from "../common/api.js";
import { h } from "../common/dom.js";
import { readInitialData } from "../common/initial-data.js";
import { attemptLines, elapsedNow, elapsedText, nextStep } from "../model/generation.js";

const POLL_MS = 1000;
const TICK_MS = 250;

const $ = (id) => document.getElementById(id);
const data = readInitialData("generate-data");
const api = new Api(data.api);
const form = $("generate-plan");
const status = $("generate-status");
const failure = $("generate-error");
const button = $("generate-button");
const panel = $("generate-progress");
const line = $("progress-line");
const elapsed = $("progress-elapsed");
const attempts = $("progress-attempts");
const cancelButton = $("cancel-generation");

let watching = null; // {proposal, readAt, poll, tick}

function showFailure(error, proposal) {
  const tried = (proposal && proposal.attempts) || [];
  failure.replaceChildren(
    h("p", {}, h("strong", {}, "The planner proposed no plan: "), error.message, " ", h("code", { dataset: { code: error.code } }, error.code)),
    tried.length
      ? h("ol", { class: "attempts" }, tried.map((attempt) =>
          h("li", { dataset: { code: attempt.code } }, `Attempt ${attempt.number}: ${attempt.problems.join("; ") || attempt.code}`)))
      : null,
  );
  failure.hidden = false;
}

function setState(state) {
  form.dataset.state = state;
  panel.dataset.state = state;
}

function render() {
  const { proposal, readAt } = watching;
  elapsed.textContent = elapsedText(elapsedNow(proposal, readAt, Date.now()));
}

function show(proposal) {
  watching.proposal = proposal;
  watching.readAt = Date.now();
  const step = nextStep(proposal);
  line.textContent = step.line;
  panel.dataset.proposal = String(proposal.id);
  panel.dataset.attempt = String(proposal.attempt);
  attempts.replaceChildren(...attemptLines(proposal).map((item) => h("li", { dataset: { code: item.code } }, item.text)));
  render();
  return step;
}

function stopWatching() {
  if (!watching) return;
  clearTimeout(watching.poll);
  clearInterval(watching.tick);
}

function finish(step) {
  stopWatching();
  const { proposal } = watching;
  if (step.next === "open") {
    setState("opening");
    cancelButton.disabled = true;
    window.location.assign(step.url);
    return;
  }
  cancelButton.hidden = true;
  button.disabled = false;
  if (step.next === "failed") {
    panel.hidden = true;
    showFailure(new ApiError(422, { detail: proposal.error, code: proposal.error_code }), proposal);
    setState("failed");
  } else {
    setState("cancelled");
  }
  watching = null;
}

async function poll() {
  if (!watching) return;
  let proposal;
  try {
    proposal = await api.get(`plans/proposals/${watching.proposal.id}`);
  } catch (error) {
    // A lost answer is not the planner's failure: say so, and keep following it.
    status.textContent = `The server did not answer (${error instanceof ApiError ? error.code : "unreachable"}); trying again…`;
    if (watching) watching.poll = setTimeout(poll, POLL_MS);
    return;
  }
  if (!watching) return; // cancelled while this answer was on its way
  status.textContent = "";
  const step = show(proposal);
  if (step.next === "poll") watching.poll = setTimeout(poll, POLL_MS);
  else finish(step);
}

function follow(proposal) {
  watching = { proposal, readAt: Date.now(), poll: null, tick: setInterval(() => watching && render(), TICK_MS) };
  failure.hidden = true;
  panel.hidden = false;
  cancelButton.hidden = false;
  cancelButton.disabled = false;
  setState("asking");
  const step = show(proposal);
  if (step.next === "poll") watching.poll = setTimeout(poll, POLL_MS);
  else finish(step);
}

cancelButton.addEventListener("click", async () => {
  if (!watching) return;
  cancelButton.disabled = true;
  try {
    const proposal = await api.post(`plans/proposals/${watching.proposal.id}/cancel`, {});
    stopWatching();
    finish(show(proposal));
  } catch (error) {
    // 409 proposal_finished: the planner answered first; the next poll opens the draft.
    status.textContent = error instanceof ApiError && error.code === "proposal_finished"
      ? "The planner answered before the cancel arrived."
      : `Could not cancel: ${error.message}`;
    cancelButton.disabled = false;
  }
});

for (const example of document.querySelectorAll("#planner-examples [data-goal]")) {
  example.addEventListener("click", () => {
    $("goal").value = example.dataset.goal;
    $("goal").focus();
  });
}

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  if (watching) return;
  failure.hidden = true;
  const goal = $("goal").value.trim();
  if (!goal) {
    showFailure(new ApiError(400, { detail: "Write the goal first.", code: "missing_goal" }), null);
    return;
  }
  button.disabled = true;
  status.textContent = "";
  try {
    follow(await api.post("plans/generate", {
      goal,
      context: $("context").value,
      constraints: $("constraints").value,
      name: $("plan-name").value.trim(),
    }));
  } catch (error) {
    showFailure(error instanceof ApiError ? error : new ApiError(0, { detail: "the server did not answer", code: "unreachable" }), null);
    setState("failed");
    button.disabled = false;
  }
});
setState("ready");
