// Exports: the current document as JSON or YAML and the graph as PNG, made in the
// browser; the saved version as Mermaid or DOT, made by the server (the same writers as
// the CLI's `forge export`).
import { downloadText, downloadUrl } from "../common/download.js";
import { toText } from "../model/text.js";

export function exportDocument({ api, store, cy, planId, format }) {
  const base = `plan-${planId}-v${store.version.number}${store.dirty ? "-draft" : ""}`;
  if (format === "json" || format === "yaml") {
    const type = format === "json" ? "application/json" : "application/yaml";
    downloadText(`${base}.${format}`, toText(store.document, format), type);
  } else if (format === "png") {
    const big = cy.nodes().length > 400;
    const url = cy.png({ full: true, scale: big ? 1 : 2, bg: "#ffffff", maxWidth: 8000, maxHeight: 8000 });
    downloadUrl(`${base}.png`, url);
  } else {
    downloadUrl("", api.url(`plans/${planId}/versions/${store.version.number}/export`, { format }));
  }
}
