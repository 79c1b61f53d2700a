// The overview: the whole plan in miniature on a canvas, with the visible part outlined.
// Click or drag on it to move the view there. Nodes are drawn once into an offscreen
// canvas when the graph changes; moving the view only redraws the outline, so panning a
// 3,000-step plan stays cheap. (cytoscape-navigator renders the graph to an image
// instead, which costs a full render of the graph on every change.)
import { COLOURS } from "./style.js";

const PAD = 6;

export class Minimap {
  constructor(cy, canvas) {
    this.cy = cy;
    this.canvas = canvas;
    this.context = canvas.getContext("2d");
    this.nodes = document.createElement("canvas");
    this.transform = null;
    this.frame = 0;
    this.dirty = true;
    const schedule = () => this.schedule();
    const changed = () => {
      this.dirty = true;
      this.schedule();
    };
    cy.on("viewport resize", schedule);
    cy.on("add remove position class data", changed);
    cy.on("layoutstop", changed);
    let dragging = false;
    const move = (event) => this.moveTo(event);
    canvas.addEventListener("pointerdown", (event) => {
      dragging = true;
      canvas.setPointerCapture(event.pointerId);
      move(event);
    });
    canvas.addEventListener("pointermove", (event) => dragging && move(event));
    canvas.addEventListener("pointerup", () => (dragging = false));
    this.schedule();
  }

  schedule() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.draw();
    });
  }

  draw() {
    const { canvas, context, cy } = this;
    if (!canvas.isConnected || canvas.offsetParent === null) return;
    const ratio = window.devicePixelRatio || 1;
    const width = canvas.clientWidth;
    const height = canvas.clientHeight;
    if (canvas.width !== width * ratio || canvas.height !== height * ratio) {
      canvas.width = width * ratio;
      canvas.height = height * ratio;
      this.dirty = true;
    }
    if (this.dirty) this.drawNodes(width, height, ratio);
    context.setTransform(1, 0, 0, 1, 0, 0);
    context.clearRect(0, 0, canvas.width, canvas.height);
    context.drawImage(this.nodes, 0, 0);
    if (!this.transform) return;
    const extent = cy.extent();
    const { scale, dx, dy } = this.transform;
    context.setTransform(ratio, 0, 0, ratio, 0, 0);
    context.strokeStyle = COLOURS.accent;
    context.lineWidth = 1.5;
    context.fillStyle = "rgba(52, 87, 213, 0.08)";
    const x = extent.x1 * scale + dx;
    const y = extent.y1 * scale + dy;
    context.fillRect(x, y, extent.w * scale, extent.h * scale);
    context.strokeRect(x, y, extent.w * scale, extent.h * scale);
  }

  drawNodes(width, height, ratio) {
    this.dirty = false;
    const { cy } = this;
    const layer = this.nodes;
    layer.width = width * ratio;
    layer.height = height * ratio;
    const context = layer.getContext("2d");
    context.setTransform(ratio, 0, 0, ratio, 0, 0);
    const nodes = cy.nodes();
    if (!nodes.length) {
      this.transform = null;
      return;
    }
    const box = nodes.boundingBox({ includeLabels: false, includeOverlays: false });
    const scale = Math.min((width - 2 * PAD) / (box.w || 1), (height - 2 * PAD) / (box.h || 1));
    const dx = PAD - box.x1 * scale + (width - 2 * PAD - box.w * scale) / 2;
    const dy = PAD - box.y1 * scale + (height - 2 * PAD - box.h * scale) / 2;
    this.transform = { scale, dx, dy };
    context.strokeStyle = "rgba(152, 162, 179, 0.6)";
    context.lineWidth = 0.6;
    context.beginPath();
    cy.edges().forEach((edge) => {
      const a = edge.source().position();
      const b = edge.target().position();
      context.moveTo(a.x * scale + dx, a.y * scale + dy);
      context.lineTo(b.x * scale + dx, b.y * scale + dy);
    });
    context.stroke();
    nodes.forEach((node) => {
      const p = node.position();
      const w = Math.max(2, node.width() * scale);
      const h = Math.max(2, node.height() * scale);
      context.fillStyle = node.hasClass("error")
        ? COLOURS.error
        : node.hasClass("warning")
          ? COLOURS.warning
          : node.hasClass("deliverable")
            ? COLOURS.accent
            : "#7d8799";
      context.fillRect(p.x * scale + dx - w / 2, p.y * scale + dy - h / 2, w, h);
    });
  }

  moveTo(event) {
    if (!this.transform) return;
    const rect = this.canvas.getBoundingClientRect();
    const { scale, dx, dy } = this.transform;
    const x = (event.clientX - rect.left - dx) / scale;
    const y = (event.clientY - rect.top - dy) / scale;
    const zoom = this.cy.zoom();
    this.cy.pan({ x: this.cy.width() / 2 - x * zoom, y: this.cy.height() / 2 - y * zoom });
  }
}
