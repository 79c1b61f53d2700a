// The preview of a step waiting for approval, as the approver reads it before deciding:
// what kind of call, its one-line summary, the whole text (a diff with its added and
// removed lines coloured by class, the exact request, argv, ...), and what approving it
// binds. A preview that could not be made is a warning; one whose call will be refused
// says why and what to change, and is never offered for approval. The approval queue renders the
// same markup on the server (templates/review/_preview.html); this builds it in the
// browser for the run page and for a queue item whose preview changed.
import { h } from "./dom.js";
import { BINDS_SENTENCE, REFUSED_SENTENCE, isWarning, previewLabel, previewLines, refusalOf, shortHash } from "../model/preview.js";

export function previewCard(preview) {
  if (!preview || !preview.hash) {
    return h("section", { class: "preview-card missing" }, h("p", { class: "muted small", text: "No preview was recorded for this step: the approval binds its arguments only." }));
  }
  const warning = isWarning(preview);
  const refusal = refusalOf(preview);
  return h(
    "section",
    { class: `preview-card${warning || refusal ? " warning" : ""}${refusal ? " refused" : ""}`, dataset: { kind: preview.kind, hash: preview.hash } },
    h("p", { class: "preview-head" }, h("span", { class: "preview-kind", text: previewLabel(preview) }), " ", h("span", { class: "preview-summary", text: preview.summary || "" })),
    warning ? h("p", { class: "preview-warning", role: "alert", text: "This call could not be previewed, so nobody can see what it will do. Approve it only if you know why." }) : null,
    refusal ? refusalBox(refusal) : null,
    h(
      "pre",
      { class: "preview-text", dataset: { kind: preview.kind } },
      previewLines(preview).map((line) => h("span", { class: `line line-${line.kind}`, text: line.text })),
    ),
    h("p", { class: "preview-binds small" }, `${BINDS_SENTENCE} Preview hash `, h("code", { class: "hash", title: preview.hash, text: `${shortHash(preview.hash)}…` }), "."),
  );
}

// Why the call will be refused and what to change: in place of an approval.
export function refusalBox(refusal) {
  return h(
    "div",
    { class: "preview-refused", role: "alert", dataset: { code: refusal.code } },
    h("p", {}, h("strong", { text: "It will be refused:" }), ` ${refusal.reason} (`, h("code", { text: refusal.code }), ")."),
    refusal.hint ? h("p", { class: "preview-fix" }, h("strong", { text: "To let it run:" }), ` ${refusal.hint}.`) : null,
    h("p", { class: "small", text: REFUSED_SENTENCE }),
  );
}
