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
    snap: true,
    snapThreshold: 24,
    snapFrequency: 30,
    noEdgeEventsInDraw: true,
    disableBrowserGestures: true,
  });
  handles.enableDrawMode();
  cy.on("ehcomplete", (event, source, target, added) => {
    added.remove();
    const dep = source.data("stepId");
    const stepId = target.data("stepId");
    // After edgehandles has finished the gesture and cleaned up its preview.
    setTimeout(() => store.edit((doc) => connect(doc, dep, stepId), { reason: "connect" }), 0);
  });
  return handles;
}
