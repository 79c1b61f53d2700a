// Who must approve a waiting step (SPEC section 10): the approval rules that match it,
// as the server judges them (GET /runs/{id}/steps/{step}/rules), drawn as the review
// card draws a version's (templates/plans/_rules.html): each rule with what it needs,
// who counts toward it and what it still lacks, then who approved but counts toward no
// rule. Nothing is decided here: the words come from the server.
import { h, replaceChildren } from "../common/dom.js";
import { describe } from "./words.js";

// The section, filled once the rules arrive; `load()` asks again (after an approval).
export function stepRulesSection(api, runId, stepId) {
  const body = h("div", { class: "step-rules-body" }, h("p", { class: "muted small", text: "Loading…" }));
  const box = h("section", { class: "step-rules", dataset: { field: "step-rules" } }, h("h3", { text: "Who must approve" }), body);
  const load = async () => {
    try {
      const answer = await api.get(`runs/${runId}/steps/${encodeURIComponent(stepId)}/rules`);
      replaceChildren(body, rulesView(answer));
    } catch (problem) {
      replaceChildren(body, h("p", { class: "error small", text: describe(problem) }));
    }
  };
  load();
  return { box, load };
}

export function rulesView(answer) {
  if (!answer || !answer.rules) return h("p", { class: "muted small", text: "The step no longer waits for approval." });
  const rows = answer.rules.map((rule) =>
    h(
      "tr",
      { dataset: { rule: rule.id, satisfied: String(rule.satisfied) } },
      h("th", { scope: "row" }, h("code", { text: rule.id }), rule.description ? h("span", { class: "rule-description muted", text: rule.description }) : null),
      h("td", {}, `${rule.required} `, rule.team ? ["of ", h("span", { class: "team", text: rule.team })] : rule.required === 1 ? "person" : "people"),
      h("td", { text: rule.approved_by.length ? rule.approved_by.join(", ") : "—" }),
      h("td", {}, rule.satisfied ? h("span", { class: "badge ok", text: "satisfied" }) : h("span", { class: "badge waiting", text: rule.lacking })),
    ),
  );
  const approved = answer.rules.every((rule) => rule.satisfied);
  const table = h(
    "table",
    { class: "rules small", dataset: { approved: String(approved) } },
    h("thead", {}, h("tr", {}, ["Rule", "Needs", "Approved by", ""].map((text) => h("th", { text })))),
    h("tbody", {}, rows),
  );
  const parts = [table];
  if (answer.not_counted.length) {
    parts.push(
      h(
        "p",
        { class: "small muted not-counted" },
        "Approved by ",
        h("span", { class: "names", text: answer.not_counted.join(", ") }),
        ", in none of the teams asked for: kept like a comment, it counts only toward ",
        h("code", { text: "default" }),
        " (when no rule matches).",
      ),
    );
  }
  return parts;
}
