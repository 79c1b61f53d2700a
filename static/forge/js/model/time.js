// A time as every page writes it: the templates' |date:"Y-m-d H:i" (and "Y-m-d H:i:s"
// where seconds matter, as on the run pages) under TIME_ZONE = "UTC". A time the browser
// draws reads the same as one the server drew, wherever the reader is; never the
// browser's own zone or locale.

// `value`: an ISO 8601 string (any offset) or a Date. Seconds are cut, not rounded, as
// Django's filter does. Nothing reads "—"; what is not a time is shown as it came.
export function utcTime(value, { seconds = false } = {}) {
  if (value === null || value === undefined || value === "") return "—";
  const date = value instanceof Date ? value : new Date(value);
  if (Number.isNaN(date.getTime())) return String(value);
  // toISOString is always UTC: 2025-01-31T09:05:07.123Z.
  return date.toISOString().slice(0, seconds ? 19 : 16).replace("T", " ");
}
