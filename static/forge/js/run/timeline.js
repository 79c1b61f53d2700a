// The timeline: one row per step, a bar from its start to its end (or to now while it
// runs), on a common time axis from the run's start. SVG built with createElementNS and
// textContent: positions are attributes, never style attributes, so the strict CSP holds.
import { STEP_LABELS } from "./state.js";

const SVG = "http://www.w3.org/2000/svg";
const ROW = 24;
const LABEL = 170;
const AXIS = 22;
const PAD_RIGHT = 64;

function el(tag, attributes = {}, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (value !== undefined && value !== null) node.setAttribute(key, String(value));
  }
  if (text !== undefined) node.textContent = text;
  return node;
}

export function formatDuration(ms) {
  if (ms === null || ms === undefined || Number.isNaN(ms)) return "—";
  if (ms > 0 && ms < 1) return "<1 ms";
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  const seconds = ms / 1000;
  if (seconds < 60) return `${seconds.toFixed(seconds < 10 ? 1 : 0)} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes} min ${String(Math.floor(seconds % 60)).padStart(2, "0")} s`;
  return `${Math.floor(minutes / 60)} h ${String(minutes % 60).padStart(2, "0")} min`;
}

// Small plans show every step; larger ones only the steps that started or wait for a
// person, latest first out, so a 3,000-step run does not draw a 70,000-pixel chart.
const ALL_ROWS = 60;
const MAX_ROWS = 120;
const NOTABLE = new Set(["running", "awaiting_approval", "needs_reconciliation", "failed", "invalid"]);

// {rows: [{id, status, start, end, running}], hidden}: times in ms since the run began.
export function timelineRows(state, now) {
  const origin = Date.parse(state.createdAt);
  let rows = state.order.map((id) => {
    const step = state.steps[id];
    const started = step.startedAt ? Date.parse(step.startedAt) : null;
    let ended = step.finishedAt ? Date.parse(step.finishedAt) : null;
    const running = step.status === "running";
    if (started !== null && ended === null && running) ended = now;
    return {
      id,
      status: step.status,
      start: started === null ? null : Math.max(0, started - origin),
      end: ended === null || started === null ? null : Math.max(0, ended - origin),
      running,
    };
  });
  if (rows.length <= ALL_ROWS) return { rows, hidden: 0 };
  const total = rows.length;
  rows = rows.filter((row) => row.start !== null || NOTABLE.has(row.status));
  rows.sort((a, b) => (a.start ?? Infinity) - (b.start ?? Infinity));
  if (rows.length > MAX_ROWS) rows = rows.slice(rows.length - MAX_ROWS);
  return { rows, hidden: total - rows.length };
}

// Where the time axis gets its marks: 0 and every multiple of the first round step (in
// milliseconds, seconds, minutes or hours) at least a fifth of ``span``, so the axis reads
// 250 ms, 500 ms... or 30 s, 1 min 00 s... rather than 247 ms, 493 ms...
const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const AXIS_STEPS = [
  1, 2, 5, 10, 20, 50, 100, 200, 250, 500,
  SECOND, 2 * SECOND, 5 * SECOND, 10 * SECOND, 15 * SECOND, 30 * SECOND,
  MINUTE, 2 * MINUTE, 5 * MINUTE, 10 * MINUTE, 15 * MINUTE, 30 * MINUTE,
  HOUR, 2 * HOUR, 3 * HOUR, 6 * HOUR, 12 * HOUR, 24 * HOUR,
];

export function axisTicks(span) {
  if (!(span > 0)) return [0];
  let step = AXIS_STEPS.find((candidate) => candidate >= span / 5);
  if (step === undefined) for (step = 24 * HOUR; step < span / 5; step *= 2);
  const ticks = [];
  for (let at = 0; at <= span; at += step) ticks.push(at);
  return ticks;
}

export class Timeline {
  constructor(container, { onSelect }) {
    this.container = container;
    this.onSelect = onSelect;
    container.addEventListener("click", (event) => {
      const row = event.target.closest("[data-step]");
      if (row) onSelect(row.dataset.step);
    });
    container.addEventListener("keydown", (event) => {
      const row = event.target.closest("[data-step]");
      if (row && (event.key === "Enter" || event.key === " ")) {
        event.preventDefault();
        onSelect(row.dataset.step);
      }
    });
  }

  render(state, now) {
    const { rows, hidden } = timelineRows(state, now);
    const width = Math.max(420, this.container.clientWidth || 720);
    const height = AXIS + (rows.length + (hidden ? 1 : 0)) * ROW + 6;
    const origin = Date.parse(state.createdAt);
    const finished = state.finishedAt ? Date.parse(state.finishedAt) - origin : null;
    const last = Math.max(1, finished || 0, ...rows.map((row) => row.end || 0), state.finishedAt ? 0 : now - origin);
    const span = last * 1.04;
    const plot = width - LABEL - PAD_RIGHT;
    const x = (ms) => LABEL + (ms / span) * plot;

    const svg = el("svg", {
      class: "timeline-chart",
      width,
      height,
      viewBox: `0 0 ${width} ${height}`,
      role: "img",
      "aria-label": "Timeline of the run's steps",
    });
    for (const at of axisTicks(span)) {
      svg.append(el("line", { class: "tick", x1: x(at), x2: x(at), y1: AXIS - 4, y2: height }));
      svg.append(el("text", { class: "tick-label", x: x(at), y: 12, "text-anchor": at === 0 ? "start" : "middle" }, formatDuration(at)));
    }
    rows.forEach((row, index) => {
      const top = AXIS + index * ROW;
      const group = el("g", { class: `row s-${row.status}`, "data-step": row.id, tabindex: 0, role: "button" });
      group.append(el("rect", { class: "row-bg", x: 0, y: top, width, height: ROW }));
      group.append(el("text", { class: "row-label", x: 8, y: top + ROW / 2 + 4 }, truncate(row.id, 22)));
      if (row.start !== null && row.end !== null) {
        const left = x(row.start);
        const barWidth = Math.max(3, x(row.end) - left);
        group.append(el("rect", { class: `bar s-${row.status}${row.running ? " running" : ""}`, x: left, y: top + 5, width: barWidth, height: ROW - 10, rx: 3 }));
        group.append(el("text", { class: "bar-label", x: left + barWidth + 6, y: top + ROW / 2 + 4 }, formatDuration(row.end - row.start)));
      } else {
        group.append(el("text", { class: "bar-label idle", x: LABEL + 4, y: top + ROW / 2 + 4 }, STEP_LABELS[row.status] || row.status));
      }
      const title = el("title", {}, `${row.id}: ${STEP_LABELS[row.status] || row.status}`);
      group.append(title);
      svg.append(group);
    });
    if (hidden) {
      const y = AXIS + rows.length * ROW + ROW / 2 + 4;
      svg.append(el("text", { class: "bar-label idle", x: 8, y }, `… and ${hidden} more step${hidden === 1 ? "" : "s"} (not started, or earlier)`));
    }
    this.container.replaceChildren(svg);
  }
}

function truncate(text, size) {
  return text.length > size ? `${text.slice(0, size - 1)}…` : text;
}
