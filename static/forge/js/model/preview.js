// What a step waiting for approval will do, as words and lines for the approver: the
// preview a step_awaiting_approval event carries ({kind, summary, text, hash, runnable,
// refusal?}; see
// forge/runners/preview.py). Pure: no DOM. runs/previews.py says the same in Python for
// the server-rendered approval queue; keep the two in step.

export const PREVIEW_LABELS = {
  file_write: "File write",
  http_request: "HTTP request",
  shell: "Shell command",
  mcp: "MCP tool call",
  call: "Tool call",
  agent: "Agent step: what it may call",
  error: "No preview",
};

export const BINDS_SENTENCE =
  "Approving binds exactly this preview: if what the step will do changes before it runs, it comes back for a new approval.";
export const CHANGED_SENTENCE = "What this step will do changed since you looked: review the new preview.";
export const REFUSED_SENTENCE =
  "This call cannot run, so it cannot be approved. Reject it to replan the run, or change the setting and start a new run.";

// The preview's lines, each with the kind the page colours it by: in a file_write diff,
// "meta" for the file names before the first hunk and for "\ No newline" notes, "hunk"
// for hunk headers, "add" and "del" for added and removed lines; every other line, and
// every line of other kinds, is "text".
export function previewLines(preview) {
  const text = preview && typeof preview.text === "string" ? preview.text : "";
  const lines = text.replace(/\n$/, "").split("\n");
  if (!preview || preview.kind !== "file_write") return lines.map((line) => ({ kind: "text", text: line }));
  let inHunk = false;
  return lines.map((line) => {
    if (line.startsWith("@@")) inHunk = true;
    return { kind: diffLineKind(line, inHunk), text: line };
  });
}

// One line of a unified diff; before the first hunk every line is a header.
export function diffLineKind(line, inHunk = true) {
  if (line.startsWith("@@")) return "hunk";
  if (!inHunk || line.startsWith("\\")) return "meta";
  if (line.startsWith("+")) return "add";
  if (line.startsWith("-")) return "del";
  return "text";
}

// A preview of kind "error" could not be made (a path outside the workspace, say): the
// approver is warned rather than shown a call.
export function isWarning(preview) {
  return Boolean(preview) && preview.kind === "error";
}

// The refusal ({code, reason, hint}) of a preview whose call its runner will refuse
// (runnable: false, e.g. an http_request to a host off FORGE_HTTP_ALLOWED_HOSTS), or
// null. Such a step is never offered for approval: the server refuses it (409
// call_refused) and the page shows what to change instead.
export function refusalOf(preview) {
  if (!preview || preview.runnable !== false) return null;
  const refusal = preview.refusal || {};
  return { code: String(refusal.code || ""), reason: String(refusal.reason || ""), hint: String(refusal.hint || "") };
}

export function previewLabel(preview) {
  return (preview && PREVIEW_LABELS[preview.kind]) || (preview && preview.kind) || "Preview";
}

export function shortHash(hash) {
  return hash ? String(hash).slice(0, 12) : "";
}
