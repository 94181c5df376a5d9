// The timeline: one row per task, its states as coloured segments over the job's life
// (pending, launched, registered, running, then its end as a mark), restarts as ticks.
import { html } from './ui.js';
import { duration, time } from './fmt.js';

function ticks(start, end) {
  const span = end - start;
  const steps = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 21600, 43200, 86400].map((s) => s * 1000);
  const step = steps.find((s) => span / s <= 6) || steps[steps.length - 1];
  const out = [];
  for (let t = 0; t <= span; t += step) out.push(t);
  return out;
}

export function Timeline({ timeline }) {
  const { start, end, rows, gang } = timeline;
  if (!rows.length) return html`<div class="empty">No tasks yet</div>`;
  const span = Math.max(1, end - start);
  const pct = (ms) => `${Math.min(100, Math.max(0, ((ms - start) / span) * 100)).toFixed(3)}%`;
  const width = (a, b) => `${Math.max(0.25, ((b - a) / span) * 100).toFixed(3)}%`;
  return html`<div class="timeline" data-start-ms=${start} data-end-ms=${end}>
    <div class="tl-row tl-axis">
      <div class="tl-label">${time(start)}</div>
      <div class="tl-track">
        ${ticks(start, end).map((t) => html`<span class="tl-tick" style=${{ left: pct(start + t) }}>${t === 0 ? '0' : `+${duration(t)}`}</span>`)}
      </div>
    </div>
    ${rows.map((r) => html`<div class="tl-row" data-task=${r.task}>
      <div class="tl-label" title=${r.task}>${r.task}</div>
      <div class="tl-track">
        ${gang.map((g) => html`<span class="tl-gang" style=${{ left: pct(g.ts) }} title=${`gang restart (attempt ${g.attempt}) at ${time(g.ts)}: ${g.reason || ''}`}></span>`)}
        ${r.segments.map((s) => s.to > s.from
          ? html`<span class=${`tl-seg seg-${s.state.toLowerCase()}`} data-state=${s.state} data-from=${s.from} data-to=${s.to}
              style=${{ left: pct(s.from), width: width(s.from, s.to) }}
              title=${`${s.state} ${time(s.from)} – ${time(s.to)} (${duration(s.to - s.from) || '0s'})`}></span>`
          : html`<span class=${`tl-end seg-${s.state.toLowerCase()}`} data-state=${s.state} data-from=${s.from}
              style=${{ left: pct(s.from) }}
              title=${`${s.state} at ${time(s.from)}${s.exit_code !== undefined ? ` (exit ${s.exit_code})` : ''}`}></span>`)}
        ${r.restarts.map((x) => html`<span class="tl-restart" data-restart=${x.restart} style=${{ left: pct(x.ts) }}
            title=${`restart ${x.restart ?? ''} at ${time(x.ts)} (exit ${x.exit_code ?? '?'})`}>↻</span>`)}
      </div>
    </div>`)}
    <div class="tl-legend">
      ${['PENDING', 'LAUNCHED', 'REGISTERED', 'RUNNING', 'SUCCEEDED', 'FAILED', 'KILLED', 'LOST'].map(
        (s) => html`<span><i class=${`seg-${s.toLowerCase()}`}></i>${s.toLowerCase()}</span>`)}
      <span><b class="tl-restart-key">↻</b>restart</span>
    </div>
  </div>`;
}
