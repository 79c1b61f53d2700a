// Selects elements and brings them into view at a size one can read: all of them when
// they fit at READABLE zoom or more (never zooming in past the current zoom or MAX), else
// the first of them, centred at READABLE. A problem clicked on a 3,000-step plan seen
// whole thus shows its step large enough to read, not a dot selected somewhere.
export const READABLE = 0.8;
const MAX = 1.1;
const PADDING = 60;

export function focusElements(cy, ids, { select = true } = {}) {
  let elements = cy.collection();
  for (const id of ids) elements = elements.union(cy.getElementById(id));
  if (elements.empty()) return elements;
  if (select) {
    cy.elements(":selected").unselect();
    elements.select();
  }
  const view = focusView(cy, elements);
  cy.stop();
  cy.animate({ zoom: view.zoom, pan: view.pan, duration: 250 });
  return elements;
}

// {zoom, pan} that shows `elements` as focusElements says.
export function focusView(cy, elements) {
  let box = elements.boundingBox({ includeLabels: false });
  const fit = Math.min((cy.width() - 2 * PADDING) / Math.max(box.w, 1), (cy.height() - 2 * PADDING) / Math.max(box.h, 1));
  let zoom = Math.min(Math.max(cy.zoom(), READABLE), Math.max(cy.zoom(), MAX), fit);
  if (zoom < READABLE) {
    zoom = READABLE;
    const first = elements.nodes().length ? elements.nodes()[0] : elements[0];
    box = first.boundingBox({ includeLabels: false });
  }
  zoom = Math.min(zoom, cy.maxZoom());
  const centre = { x: (box.x1 + box.x2) / 2, y: (box.y1 + box.y2) / 2 };
  return { zoom, pan: { x: cy.width() / 2 - centre.x * zoom, y: cy.height() / 2 - centre.y * zoom } };
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

// At once (the container just changed size): the whole plan in view, never blown up
// past MAX.
export function fitVisible(cy) {
  const nodes = cy.nodes("[base]");
  if (nodes.empty()) return;
  cy.stop();
  cy.fit(nodes, 48);
  if (cy.zoom() > MAX) {
    cy.zoom(MAX);
    cy.center(nodes);
  }
}
