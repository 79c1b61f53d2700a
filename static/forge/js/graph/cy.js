// Creates the Cytoscape instance every plan graph uses, with the stylesheet from style.js.
// cytoscape-edgehandles is a UMD build loaded by a plain <script> before the modules
// (it has no ES module build); it is registered here once, for pages that edit.
import cytoscape from "../../../vendor/cytoscape/cytoscape.esm.min.mjs";
import { LARGE_GRAPH, LARGE_STYLE, STYLE } from "./style.js";

let edgehandlesRegistered = false;

export function createGraph(container, { size = 0, editable = false } = {}) {
  if (editable && !edgehandlesRegistered) {
    if (typeof window.cytoscapeEdgehandles !== "function") {
      throw new Error("cytoscape-edgehandles did not load");
    }
    cytoscape.use(window.cytoscapeEdgehandles);
    edgehandlesRegistered = true;
  }
  const large = size > LARGE_GRAPH;
  const cy = cytoscape({
    container,
    style: large ? [...STYLE, ...LARGE_STYLE] : STYLE,
    minZoom: 0.02,
    maxZoom: 2.5,
    boxSelectionEnabled: editable,
    selectionType: "single",
    autoungrabify: !editable,
    autounselectify: false,
    textureOnViewport: large,
    hideEdgesOnViewport: large,
    motionBlur: false,
    pixelRatio: large ? 1 : "auto",
  });
  showTitles(cy, container);
  return cy;
}

// A node's whole text (data "title": its id, description and tool, which its label may
// have had to cut) as the graph's tooltip while the pointer is over it. An attribute,
// never markup.
function showTitles(cy, container) {
  cy.on("mouseover", "node[title]", (event) => container.setAttribute("title", event.target.data("title")));
  cy.on("mouseout", "node", () => container.removeAttribute("title"));
}
