// Formatting of numbers, sizes, times and durations, as `loom status` prints them.

export const TERMINAL = new Set(['SUCCEEDED', 'FAILED', 'KILLED', 'LOST']);
export const JOB_STATES = ['QUEUED', 'SUBMITTED', 'RUNNING', 'SUCCEEDED', 'FAILED', 'KILLED'];

export function bytes(n) {
  if (n === undefined || n === null || !(n > 0)) return '';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v < 10 && i > 0 ? v.toFixed(1) : Math.round(v)} ${units[i]}`;
}

export function cores(c) {
  if (c === undefined || c === null) return '';
  return c < 10 ? c.toFixed(2) : c.toFixed(1);
}

export function duration(ms) {
  if (!(ms > 0)) return '';
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)}s`;
  const s = Math.floor(ms / 1000);
  if (ms < 3600000) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  if (ms < 86400000) return `${Math.floor(s / 3600)}h${String(Math.floor(s / 60) % 60).padStart(2, '0')}m`;
  return `${Math.floor(s / 86400)}d${String(Math.floor(s / 3600) % 24).padStart(2, '0')}h`;
}

const pad = (n) => String(n).padStart(2, '0');

// "2026-11-29 12:34:56", local time.
export function datetime(ms) {
  if (!(ms > 0)) return '';
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

export function time(ms) {
  if (!(ms > 0)) return '';
  const d = new Date(ms);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

export function ago(ms, now = Date.now()) {
  if (!(ms > 0)) return '';
  const d = Math.max(0, now - ms);
  return d < 1000 ? 'now' : `${duration(d)} ago`;
}

// A date input's value ("2026-11-29") as ms since the epoch at local midnight; `end`: the next
// midnight (an "until" that includes the whole day).
export function dateToMs(value, end = false) {
  if (!value) return undefined;
  const [y, m, d] = value.split('-').map(Number);
  if (!y || !m || !d) return undefined;
  return new Date(y, m - 1, d + (end ? 1 : 0)).getTime() - (end ? 1 : 0);
}

// A URL from the job record, for an href: only http(s); anything else (javascript:, data:)
// is not a link.
export function safeUrl(u) {
  if (typeof u !== 'string') return null;
  try {
    const url = new URL(u, document.baseURI);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : null;
  } catch (e) {
    return null;
  }
}

export function stateClass(state) {
  return `state state-${String(state || 'unknown').toLowerCase().replace(/[^a-z]/g, '')}`;
}
