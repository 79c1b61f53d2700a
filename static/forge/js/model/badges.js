// Badges as an SVG image for a node's background: pills in a row, red for errors, amber
// for warnings, blue for infos. Pure. The words come from paint.js's fixed table, never
// from a plan, and the SVG is a data: URL (allowed by the pages' img-src), so nothing a
// plan says can end up in markup.
// "thread": open review threads on the step (purple, apart from the compiler's colours).
const COLOURS = { error: "#d92d20", warning: "#dc6803", info: "#1570ef", thread: "#6941c6" };
const CHAR = 6.2;
const HEIGHT = 16;
const GAP = 4;

export const BADGE_HEIGHT = HEIGHT;

function escapeXml(text) {
  return String(text).replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

// {url, width, height} for badges [{text, severity}], right-aligned in `width`.
export function badgeImage(badges, width) {
  if (!badges.length) return null;
  const pills = [];
  let x = width;
  for (const badge of [...badges].reverse()) {
    const w = Math.ceil(badge.text.length * CHAR + 12);
    x -= w;
    pills.unshift(
      `<rect x="${x}" y="0" width="${w}" height="${HEIGHT}" rx="8" fill="${COLOURS[badge.severity] || COLOURS.error}"/>` +
        `<text x="${x + w / 2}" y="11.5" text-anchor="middle" font-family="system-ui,sans-serif" font-size="10.5" font-weight="600" fill="#fff">${escapeXml(badge.text)}</text>`,
    );
    x -= GAP;
  }
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${HEIGHT}" viewBox="0 0 ${width} ${HEIGHT}">${pills.join("")}</svg>`;
  return { url: `data:image/svg+xml;utf8,${encodeURIComponent(svg)}`, width, height: HEIGHT };
}
