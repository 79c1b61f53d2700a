// The "Start run" form of the run list and of /runs/new/: POST /api/v1/runs with the
// chosen plan and approved version, then go to the new run's page. The server refuses a
// version that is not approved or no longer compiles (409); the form shows why.
import { Api } from "../common/api.js";
import { readInitialData } from "../common/initial-data.js";
import { describe } from "./words.js";

const form = document.getElementById("start-run");
if (form) {
  const data = readInitialData("start-data");
  const api = new Api(data.api);
  const error = form.querySelector(".start-error");
  const button = form.querySelector("button[type=submit]");
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const [plan, version] = form.elements.version.value.split(":").map(Number);
    if (!plan || !version) return;
    button.disabled = true;
    error.hidden = true;
    try {
      const run = await api.post("runs", { plan_id: plan, version });
      window.location.assign(data.run.replace("{id}", String(run.id)));
    } catch (problem) {
      error.textContent = describe(problem);
      error.hidden = false;
      button.disabled = false;
    }
  });
  form.dataset.ready = "1";
}
