// Milestones as bands: a box behind the steps of each milestone of the plan, titled with
// its number, title and whether a review ends it, drawn after a layout (call it again
// after the next). Bands carry no `base`, so layout, element sync and diagnostics leave
// them alone, and `events: no` lets clicks through to the steps.
const PAD = 12;
const TITLE = 18; // room for the title, inside the band's top

export function drawMilestones(cy, doc) {
  const milestones = Array.isArray(doc && doc.milestones) ? doc.milestones : [];
  cy.batch(() => {
    cy.nodes(".milestone-band").remove();
    milestones.forEach((milestone, index) => {
      const members = cy.collection();
      for (const id of milestone.steps || []) {
        const node = cy.getElementById(id);
        if (node.nonempty() && node.data("base") !== undefined) members.merge(node);
      }
      if (members.empty()) return;
      const box = members.boundingBox({ includeLabels: true, includeOverlays: false });
      const title = milestone.title || milestone.id;
      cy.add({
        group: "nodes",
        data: {
          id: `milestone:${milestone.id}`,
          milestone: milestone.id,
          label: `${index + 1}. ${title}${milestone.review ? " · then a review" : ""}`,
          w: box.w + 2 * PAD,
          h: box.h + 2 * PAD + TITLE,
        },
        position: { x: (box.x1 + box.x2) / 2, y: (box.y1 + box.y2 - TITLE) / 2 },
        classes: milestone.review ? "milestone-band review" : "milestone-band",
        selectable: false,
        grabbable: false,
        locked: true,
      });
    });
  });
}
