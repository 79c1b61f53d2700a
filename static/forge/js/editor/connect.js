// Drawing dependencies: drag from one step to another and the second comes to depend on
// the first (edgehandles in draw mode: the whole node is the handle, so nodes are not
// dragged around; the layout places them). The edge edgehandles draws is only a preview:
// it is removed at once and the document gains the dependency, which the graph then
// shows. Cycles may be drawn on purpose; the compiler reports them.
import { connect, dependsOn, findStep } from "../model/document.js";

export function enableConnecting(cy, store) {
  const handles = cy.edgehandles({
    canConnect: (source, target) => {
      if (source.same(target)) return false;
      if (source.data("kind") !== "step" || target.data("kind") !== "step") return false;
      const step = findStep(store.document, target.data("stepId"));
      return Boolean(step) && !dependsOn(step).includes(source.data("stepId"));
    },
    edgeParams: () => ({ classes: "eh-new" }),
    hoverDelay: 60,
    // No snapping: the target is the step under the pointer. With snapping, a release on
    // a step that cannot take the edge (already connected) picked a neighbour instead.
    snap: false,
    noEdgeEventsInDraw: true,
    disableBrowserGestures: true,
  });
  handles.enableDrawMode();

  cy.on("ehcomplete", (event, source, target, added) => {
    // The preview edge goes; the document's edge comes with the edit. Rendering and
    // layout leave edgehandles' own elements alone (they carry no data.base), so the
    // edit can happen at once, before the gesture has cleaned up.
    added.remove();
    store.edit((doc) => connect(doc, source.data("stepId"), target.data("stepId")), { reason: "connect" });
  });
  return handles;
}
