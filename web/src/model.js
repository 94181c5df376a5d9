// What the job page derives from the API's answers, free of the DOM: the timeline of each task
// from events.jsonl's entries, what the events say of each task (host, container), and the
// plots' aligned series from metrics.jsonl's samples.
import { TERMINAL } from './fmt.js';

// "worker:10" after "worker:9"; "am" and the like by name.
export function compareTasks(a, b) {
  const [ta, ia] = String(a).split(':');
  const [tb, ib] = String(b).split(':');
  if (ta !== tb) return ta < tb ? -1 : 1;
  return (Number(ia) || 0) - (Number(ib) || 0) || (a < b ? -1 : a > b ? 1 : 0);
}

// Per task: host, container, node_id, node_http, as the TASK_STATE events last gave them.
export function taskFacts(events) {
  const facts = {};
  for (const e of events) {
    if (e.event !== 'TASK_STATE' || !e.task) continue;
    const f = (facts[e.task] ||= {});
    for (const k of ['host', 'container', 'node_id', 'node_http', 'address']) if (e[k]) f[k] = e[k];
  }
  return facts;
}

// One row per task: its states as segments [from, to) in ms, its single restarts, and the
// restarts of the whole gang. `now` ends the open segments of a job still running.
export function buildTimeline(events, job, now = Date.now()) {
  const rows = new Map();
  const row = (task) => {
    if (!rows.has(task)) rows.set(task, { task, segments: [], restarts: [] });
    return rows.get(task);
  };
  for (const t of (job && job.tasks) || []) row(t.task);
  const gang = [];
  let first = Infinity;
  let last = 0;
  for (const e of events) {
    const ts = Number(e.ts) || 0;
    if (!ts) continue;
    first = Math.min(first, ts);
    last = Math.max(last, ts);
    if (e.event === 'TASK_STATE' && e.task && e.state) {
      const r = row(e.task);
      const prev = r.segments[r.segments.length - 1];
      if (prev && prev.to === undefined) prev.to = ts;
      if (prev && prev.state === e.state && TERMINAL.has(e.state) === false) {
        prev.to = undefined;  // the same state again (a new address): one segment
        continue;
      }
      // An end (FAILED before a restart, SUCCEEDED) is a mark: it lasts no time.
      r.segments.push({ state: e.state, from: ts, to: TERMINAL.has(e.state) ? ts : undefined, exit_code: e.exit_code });
    } else if (e.event === 'TASK_RESTARTING' && e.task) {
      row(e.task).restarts.push({ ts, restart: e.restart, exit_code: e.exit_code });
    } else if (e.event === 'JOB_RESTARTING') {
      gang.push({ ts, attempt: e.attempt, reason: e.reason });
    }
  }
  const start = (job && job.submitted_ms) || (first === Infinity ? now : first);
  const end = job && job.final ? Math.max(job.finished_ms || 0, last, start + 1) : Math.max(now, last, start + 1);
  for (const r of rows.values()) {
    for (const s of r.segments) {
      if (s.to === undefined) s.to = TERMINAL.has(s.state) ? s.from : end;
    }
  }
  const list = [...rows.values()].sort((a, b) => compareTasks(a.task, b.task));
  return { start, end, rows: list, gang };
}

// Series aligned on one x axis (seconds, as uPlot wants) from samples: `pick(sample)` gives
// [[label, value], ...] for each sample (nothing where it has no value). `x0`: ms subtracted
// from every x (a relative axis), else x is the epoch time. Past `maxPoints` distinct times (a
// long job, many tasks) the times are put in buckets of equal width, each holding a series'
// largest value in it: a peak stays visible, and the page stays light.
export function alignSeries(samples, pick, x0 = 0, maxPoints = 2000) {
  const byLabel = new Map();
  const xs = new Set();
  for (const s of samples) {
    for (const [label, v] of pick(s)) {
      if (v === undefined || v === null || Number.isNaN(v)) continue;
      if (!byLabel.has(label)) byLabel.set(label, []);
      byLabel.get(label).push([s.ms, v]);
      xs.add(s.ms);
    }
  }
  let key = (ms) => ms;
  if (xs.size > maxPoints) {
    let lo = Infinity;
    let hi = -Infinity;
    for (const ms of xs) {
      lo = Math.min(lo, ms);
      hi = Math.max(hi, ms);
    }
    const width = Math.max(1, Math.ceil((hi - lo + 1) / maxPoints));
    key = (ms) => lo + Math.floor((ms - lo) / width) * width;
  }
  const cols = new Map();
  const times = new Set();
  for (const [label, points] of byLabel) {
    const m = new Map();
    for (const [ms, v] of points) {
      const k = key(ms);
      times.add(k);
      if (!m.has(k) || m.get(k) < v) m.set(k, v);
    }
    cols.set(label, m);
  }
  const t = [...times].sort((a, b) => a - b);
  const labels = [...byLabel.keys()].sort(compareTasks);
  const data = [t.map((ms) => (ms - x0) / 1000), ...labels.map((l) => {
    const m = cols.get(l);
    return t.map((ms) => (m.has(ms) ? m.get(ms) : null));
  })];
  return { labels, data };
}

export const pickCpu = (s) => [[s.task, s.cpu]];
export const pickRss = (s) => [[s.task, s.rss]];
export const pickGpuUtil = (s) => (s.gpus || []).map((g) => [`${s.task} gpu${g.i}`, g.util]);
export const pickGpuMem = (s) => (s.gpus || []).map((g) => [`${s.task} gpu${g.i}`, g.mem]);

// The newest sample of each task.
export function latestSamples(samples) {
  const out = {};
  for (const s of samples) if (!out[s.task] || out[s.task].ms <= s.ms) out[s.task] = s;
  return out;
}
