// Selects elements and brings them into view: centred when they fit at the current zoom,
// else zoomed out just enough to show them all.
export function focusElements(cy, ids, { select = true } = {}) {
  let elements = cy.collection();
  for (const id of ids) elements = elements.union(cy.getElementById(id));
  if (elements.empty()) return elements;
  if (select) {
    cy.elements(":selected").unselect();
    elements.select();
  }
  const box = elements.boundingBox();
  const zoom = cy.zoom();
  const fits = box.w * zoom < cy.width() * 0.9 && box.h * zoom < cy.height() * 0.9;
  cy.stop();
  if (fits) cy.animate({ center: { eles: elements }, duration: 250 });
  else cy.animate({ fit: { eles: elements, padding: 60 }, duration: 250 });
  return elements;
}

// Zoom around the centre of the view.
export function zoomBy(cy, factor) {
  const zoom = Math.min(cy.maxZoom(), Math.max(cy.minZoom(), cy.zoom() * factor));
  cy.zoom({ level: zoom, renderedPosition: { x: cy.width() / 2, y: cy.height() / 2 } });
}

export function fitAll(cy) {
  cy.stop();
  cy.animate({ fit: { eles: cy.elements(), padding: 48 }, duration: cy.nodes().length > 400 ? 0 : 200 });
}
