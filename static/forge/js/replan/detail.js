// The side panel of one step of the selected replan: its fate, its status in each
// version, the result it kept or the failure it caused, what changed between the
// versions, and the step's details as the other review pages show them
// (common/step-details.js). Built with textContent only (common/dom.js).
import { h, replaceChildren } from "../common/dom.js";
import { stepElement } from "../common/step-details.js";
import { findStep } from "../model/document.js";
import { statusWords } from "./model.js";

export const FATE_WORDS = {
  failed: "failed",
  kept: "kept its result",
  added: "added",
  removed: "removed",
  changed: "changed",
  rerun: "runs again",
  waiting: "outside the reset",
};

// Which version's step the details show: the new version's when it has the step, else
// the one that failed.
export function shownVersion(replan, info) {
  return replan.to && info.inNew ? replan.to : replan.from;
}

// `pauses` and `resolved`: per version number, as the page data hands them over.
export function renderStepDetail(section, { id, info, replan, oldDoc, newDoc, statuses, pauses = {}, resolved = {} }) {
  const version = shownVersion(replan, info);
  const step = (version === replan.to ? findStep(newDoc, id) : findStep(oldDoc, id)) || { id };
  const before = (statuses[String(replan.from)] || {})[id];
  const after = replan.to ? (statuses[String(replan.to)] || {})[id] : undefined;
  const parts = [
    h(
      "div",
      { class: "detail-head" },
      h("h2", { text: id }),
      h("span", { class: "fate", dataset: { fate: info.fate }, text: info.fate === "kept" && !replan.resume ? "keeps its result if unchanged" : FATE_WORDS[info.fate] }),
      h("button", { type: "button", class: "link small", dataset: { action: "close-detail" }, text: "close" }),
    ),
  ];
  const meta = [];
  if (info.inOld) meta.push(h("dt", { text: `In v${replan.from}` }), h("dd", { text: statusWords(before || "pending") }));
  if (replan.to && info.inNew) meta.push(h("dt", { text: `In v${replan.to}` }), h("dd", { text: statusWords(after || "pending") }));
  if (info.reset) meta.push(h("dt", { text: "Reset" }), h("dd", { text: `yes: ${replan.failure.step === id ? "the failed step" : `a descendant of ${replan.failure.step}`}` }));
  parts.push(h("dl", { class: "meta" }, meta));
  if (id === replan.failure.step) {
    const failure = [h("p", { class: "failure-reason", text: replan.failure.error || `${replan.failure.verb}` })];
    const verdict = replan.failure.verdict;
    if (verdict && verdict.valid === false && Array.isArray(verdict.checks) && verdict.checks.length) {
      failure.push(h("p", { class: "small" }, "Checks: ", verdict.checks.map((check, index) => [index ? ", " : "", h("code", { text: check })])));
    }
    parts.push(h("h3", { text: "Failure" }), h("div", { class: "failure-box" }, failure));
  }
  const output = (replan.outputs || {})[id];
  if (output && info.fate === "kept") {
    parts.push(h("h3", { text: replan.resume ? "Kept result" : "Result it would keep" }), h("pre", { class: "json", text: output.truncated ? `${output.text}\n…` : output.text }));
  }
  if (info.changes.length) {
    parts.push(
      h("h3", { text: `Changed in v${replan.to}` }),
      h("ul", { class: "diff-changes" }, info.changes.flatMap((change) => change.lines).map((line) => h("li", { class: "changed", text: line }))),
    );
  }
  const key = String(version);
  parts.push(h("h3", { text: `The step in v${version}` }), stepElement(step, { pauses: pauses[key], resolved: (resolved[key] || {})[id] }));
  replaceChildren(section, parts);
  section.hidden = false;
  section.dataset.step = id;
}
