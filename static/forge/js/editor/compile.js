// Live diagnostics: every change of the document is compiled on the server by the same
// compiler that saves versions (POST /api/v1/compile), debounced so that typing does not
// send a request per key. Answers that arrive after a newer request was sent are
// dropped. A document the server refuses before compiling (a bad id, a wrong type) comes
// back as one error diagnostic with the refusal's code, on the step its path names.
import { ApiError } from "../common/api.js";
import { debounce } from "../common/debounce.js";
import { stepIds } from "../model/document.js";

// A compile that has not answered in this long is abandoned and sent again, and a
// request that failed on the way (not a refusal) is retried, before "failed" is shown:
// a dropped connection should not leave the problems panel stale until the next edit.
// A compile past the person's compile rate (429 throttled) waits the Retry-After it was
// given and is sent again, still pending: it is not a failure.
const ATTEMPT_TIMEOUT_MS = 8000;
const ATTEMPTS = 3;

export class LiveCompiler {
  constructor(api, store, { wait = 350 } = {}) {
    this.api = api;
    this.store = store;
    this.sequence = 0;
    this.controller = null;
    this.schedule = debounce(() => this.run(), wait);
    store.addEventListener("document", (event) => {
      if (event.detail.reason === "saved") return; // the save answered with diagnostics
      store.setCompileState("pending");
      this.schedule();
    });
  }

  // Compiles now; resolves when the answer has been applied (or dropped).
  async run() {
    this.schedule.cancel();
    const sequence = ++this.sequence;
    if (this.controller) this.controller.abort();
    let controller = new AbortController();
    this.controller = controller;
    this.store.setCompileState("pending");
    for (let attempt = 1; attempt <= ATTEMPTS; attempt += 1) {
      const timer = setTimeout(() => controller.abort(new Error("timeout")), ATTEMPT_TIMEOUT_MS);
      try {
        const result = await this.api.post("compile", { document: this.store.document }, { signal: controller.signal });
        if (sequence === this.sequence) this.store.setDiagnostics(result.diagnostics);
        return;
      } catch (error) {
        if (sequence !== this.sequence) return; // a newer compile took over
        if (error instanceof ApiError && error.status === 429) {
          clearTimeout(timer);
          await new Promise((resolve) => setTimeout(resolve, 1000 * Math.max(error.retryAfter || 1, 1)));
          if (sequence !== this.sequence) return;
          controller = new AbortController();
          this.controller = controller;
          attempt -= 1; // waiting its turn is not a failed attempt
          continue;
        }
        if (error instanceof ApiError && (error.status === 400 || error.status === 422)) {
          const ids = stepIds(this.store.document);
          this.store.setDiagnostics([refusal(error, ids)], { documentError: true });
          return;
        }
        if (error instanceof ApiError && error.status < 500) break; // refused: retrying will not help
      } finally {
        clearTimeout(timer);
      }
      if (attempt < ATTEMPTS) {
        controller = new AbortController();
        this.controller = controller;
        await new Promise((resolve) => setTimeout(resolve, 300 * attempt));
        if (sequence !== this.sequence) return;
      }
    }
    this.store.setCompileState("failed");
  }
}

function refusal(error, ids) {
  let message = error.message;
  if (error.status === 422 && Array.isArray(error.body.errors) && error.body.errors.length) {
    const first = error.body.errors[0];
    message = `${(first.loc || []).join(".")}: ${first.msg}`;
  }
  // "steps.<id>.<field>: ..." names the step; ids may hold dots, so take the longest
  // id of the document that the path starts with.
  const path = message.startsWith("steps.") ? message.slice(6).split(":")[0] : "";
  const named = ids
    .filter((id) => path === id || path.startsWith(`${id}.`) || path.startsWith(`${id}[`))
    .sort((a, b) => b.length - a.length)[0];
  return {
    code: error.code || "invalid_document",
    severity: "error",
    message,
    nodes: named ? [named] : [],
    edges: [],
  };
}
