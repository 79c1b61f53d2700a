// Review threads as DOM, for the editor's step panel and the version page: each thread
// with its comments, outdated/resolved marks, a reply box and Resolve/Reopen; and the
// form that opens a thread on a step or on the whole version. Every word goes in through
// textContent (common/dom.js). Writes go to the API (reviews.api):
//   POST versions/{id}/threads {step_id, body}, POST threads/{id}/replies {body},
//   POST threads/{id}/resolve | reopen; then `onChange()` reloads the list.
import { ApiError } from "../common/api.js";
import { h } from "../common/dom.js";
import { utcTime } from "../model/time.js";

const REASONS = { changed: "outdated: the step changed since", removed: "outdated: the step was removed since" };

function problemText(problem) {
  return problem instanceof ApiError ? `${problem.message}${problem.code && problem.code !== "error" ? ` (${problem.code})` : ""}` : "The server did not answer.";
}

// Runs `action` with `button` disabled; shows a refusal in `error`.
async function send(button, error, action) {
  button.disabled = true;
  error.hidden = true;
  try {
    await action();
  } catch (problem) {
    error.textContent = problemText(problem);
    error.hidden = false;
    button.disabled = false;
  }
}

export function threadView(thread, { api, canComment, onChange }) {
  const marks = [];
  if (thread.carried) marks.push(h("span", { class: "tag carried" }, `from v${thread.version}`));
  if (thread.outdated) marks.push(h("span", { class: "tag outdated", dataset: { reason: thread.outdated_reason } }, REASONS[thread.outdated_reason] || "outdated"));
  if (thread.resolved) marks.push(h("span", { class: "tag resolved" }, `resolved by ${thread.resolved_by}`));
  const article = h(
    "article",
    {
      class: "thread",
      dataset: { threadId: thread.id, step: thread.step_id, state: thread.resolved ? "resolved" : thread.outdated ? "outdated" : "open" },
    },
    h("header", {}, h("strong", {}, thread.step_id ? `Step ${thread.step_id}` : "The whole version"), " ", ...marks),
    h(
      "ol",
      { class: "comments" },
      thread.comments.map((comment) =>
        h(
          "li",
          { class: "comment", dataset: { author: comment.author } },
          h("span", { class: "who" }, comment.author),
          " ",
          h("time", { class: "muted small", datetime: comment.created_at }, utcTime(comment.created_at)),
          h("p", { class: "body" }, comment.body),
        ),
      ),
    ),
  );
  if (!canComment) return article;
  const error = h("p", { class: "error small", role: "alert", hidden: true });
  const box = h("textarea", { rows: 2, maxlength: 10000, placeholder: "Reply", "aria-label": "Reply", class: "reply-body" });
  const replyButton = h("button", { type: "button", class: "secondary small", dataset: { threadAction: "reply" } }, "Reply");
  const toggle = h("button", { type: "button", class: "secondary small", dataset: { threadAction: thread.resolved ? "reopen" : "resolve" } }, thread.resolved ? "Reopen" : "Resolve");
  replyButton.addEventListener("click", () =>
    send(replyButton, error, async () => {
      if (!box.value.trim()) throw new Error("Write a reply first.");
      await api.post(`threads/${thread.id}/replies`, { body: box.value });
      await onChange();
    }).catch(() => undefined),
  );
  toggle.addEventListener("click", () =>
    send(toggle, error, async () => {
      await api.post(`threads/${thread.id}/${thread.resolved ? "reopen" : "resolve"}`, {});
      await onChange();
    }),
  );
  article.append(box, h("div", { class: "buttons" }, replyButton, toggle), error);
  return article;
}

// The form that opens a thread on `stepId` ("" for the whole version) of version `versionId`.
export function newThreadForm({ api, versionId, stepId, onChange }) {
  const box = h("textarea", {
    rows: 2,
    maxlength: 10000,
    class: "new-thread-body",
    placeholder: stepId ? `Comment on step ${stepId}` : "Comment on the whole version",
    "aria-label": stepId ? `Comment on step ${stepId}` : "Comment on the whole version",
  });
  const button = h("button", { type: "button", class: "secondary small", dataset: { threadAction: "open" } }, "Comment");
  const error = h("p", { class: "error small", role: "alert", hidden: true });
  button.addEventListener("click", () =>
    send(button, error, async () => {
      if (!box.value.trim()) throw new Error("Write a comment first.");
      await api.post(`versions/${versionId}/threads`, { step_id: stepId, body: box.value });
      await onChange();
    }),
  );
  return h("div", { class: "new-thread" }, box, h("div", { class: "buttons" }, button), error);
}

// A section listing `threads` (already filtered) and, when allowed, the new-thread form.
export function threadsSection({ title, threads, api, versionId, stepId, canComment, onChange, empty }) {
  return h(
    "section",
    { class: "threads", dataset: { step: stepId } },
    h("h3", {}, title, " ", h("span", { class: "count" }, String(threads.filter((t) => !t.resolved && !t.outdated).length))),
    threads.length ? threads.map((thread) => threadView(thread, { api, canComment, onChange })) : h("p", { class: "muted small" }, empty),
    canComment && versionId ? newThreadForm({ api, versionId, stepId, onChange }) : null,
  );
}
