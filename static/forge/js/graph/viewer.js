// A read-only plan graph (version and diff pages): draw, lay out, and the small tool row
// (zoom, fit, PNG). Nodes can be selected but not moved.
import { downloadUrl } from "../common/download.js";
import { createGraph } from "./cy.js";
import { fitAll, zoomBy } from "./focus.js";
import { runLayout } from "./layout.js";

export function createViewer(container, { size, filename }) {
  const cy = createGraph(container, { size, editable: false });
  const tools = container.parentElement.querySelector(".graph-tools");
  if (tools) {
    tools.addEventListener("click", (event) => {
      const action = event.target.closest("[data-action]");
      if (!action) return;
      ({
        "zoom-in": () => zoomBy(cy, 1.25),
        "zoom-out": () => zoomBy(cy, 0.8),
        fit: () => fitAll(cy),
        "export-png": () => downloadUrl(`${filename}.png`, cy.png({ full: true, scale: 2, bg: "#ffffff", maxWidth: 8000, maxHeight: 8000 })),
      })[action.dataset.action]?.();
    });
  }
  return { cy, layout: () => runLayout(cy, { fit: true }) };
}
