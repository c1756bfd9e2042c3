// Formatting and DOM helpers. Every text that comes from the server reaches the page through
// textContent, title or dataset, never through HTML parsing: lock names and owners are user input.

const integer = new Intl.NumberFormat('en-US');
const rate = new Intl.NumberFormat('en-US', { maximumFractionDigits: 1 });

/** Returns `n` with thousands separators ("10,000"). */
export function formatInteger(n) {
  return integer.format(n);
}

/** Returns a rate per second with at most one decimal ("12.5"). */
export function formatRate(n) {
  return rate.format(n);
}

/** Returns a duration for a countdown: "9.4 s", "4 m 05 s", "2 h 03 m"; 0 and below as "0.0 s". */
export function formatLeft(ms) {
  if (!(ms > 0)) return '0.0 s';
  if (ms < 60_000) return `${(Math.floor(ms / 100) / 10).toFixed(1)} s`;
  const s = Math.floor(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)} m ${String(s % 60).padStart(2, '0')} s`;
  return `${Math.floor(s / 3600)} h ${String(Math.floor(s / 60) % 60).padStart(2, '0')} m`;
}

/** Returns the local time of day of `ms` since the epoch: "14:03:27.412". */
export function formatClock(ms) {
  const d = new Date(ms);
  const two = (x) => String(x).padStart(2, '0');
  return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}.${String(
    d.getMilliseconds(),
  ).padStart(3, '0')}`;
}

/** Creates an element with `className` and, when given, `text` as its text content. */
export function element(tag, className, text) {
  const el = document.createElement(tag);
  if (className) el.className = className;
  if (text !== undefined) el.textContent = text;
  return el;
}

/** Sets the text content (and, with `title`, the tooltip) of `el` only when it changed. */
export function setText(el, text, title) {
  if (el.textContent !== text) el.textContent = text;
  if (title !== undefined && el.title !== title) el.title = title;
}
