// Two jobs' CPU and RSS, overlaid on one time axis (seconds from each job's first sample) or
// side by side.
import { useEffect, useMemo, useState } from 'preact/hooks';
import { html, StateBadge, ErrorBox, jobHref } from './ui.js';
import { api } from './api.js';
import { duration } from './fmt.js';
import { alignSeries, pickCpu, pickRss } from './model.js';
import { Plot } from './plot.js';

async function load(id) {
  const [job, m] = await Promise.all([api.job(id), api.metrics(id)]);
  return { job, samples: (m.samples || []).slice().sort((a, b) => a.ms - b.ms) };
}

function relative(samples, tag, pick) {
  const x0 = samples.length ? samples[0].ms : 0;
  return alignSeries(samples, (s) => pick(s).map(([l, v]) => [`${tag} ${l}`, v]), x0);
}

// Two aligned sets on one x axis.
function merge(a, b) {
  const xs = [...new Set([...a.data[0], ...b.data[0]])].sort((p, q) => p - q);
  const col = (set, i) => {
    const m = new Map(set.data[0].map((x, k) => [x, set.data[i + 1][k]]));
    return xs.map((x) => (m.has(x) ? m.get(x) : null));
  };
  return {
    labels: [...a.labels, ...b.labels],
    data: [xs, ...a.labels.map((_, i) => col(a, i)), ...b.labels.map((_, i) => col(b, i))],
  };
}

export function ComparePage({ a, b }) {
  const [jobs, setJobs] = useState(null);
  const [error, setError] = useState(null);
  const [mode, setMode] = useState('overlay');
  useEffect(() => {
    let stop = false;
    setJobs(null);
    Promise.all([load(a), load(b)]).then((r) => !stop && setJobs(r), (e) => !stop && setError(e));
    return () => { stop = true; };
  }, [a, b]);
  const sets = useMemo(() => {
    if (!jobs) return null;
    const [A, B] = jobs;
    const out = {};
    for (const [name, pick] of [['cpu', pickCpu], ['rss', pickRss]]) {
      const sa = relative(A.samples, 'A', pick);
      const sb = relative(B.samples, 'B', pick);
      out[name] = { a: sa, b: sb, both: merge(sa, sb) };
    }
    return out;
  }, [jobs]);

  if (error) return html`<div class="page"><${ErrorBox} error=${error} /></div>`;
  if (!jobs) return html`<div class="page muted">Loading…</div>`;
  const side = mode === 'side';
  return html`<div class="page compare-page">
    <div class="page-head">
      <h1>Compare</h1>
      <div class="seg-toggle" role="group">
        <button class=${`btn ${!side ? 'on' : ''}`} onClick=${() => setMode('overlay')}>Overlaid</button>
        <button class=${`btn ${side ? 'on' : ''}`} onClick=${() => setMode('side')}>Side by side</button>
      </div>
    </div>
    <div class="compare-jobs">
      ${jobs.map(({ job, samples }, i) => html`<div class="card compare-job" data-job=${job.job_id}>
        <span class="tag">${i ? 'B' : 'A'}</span>
        <a href=${jobHref(job.job_id)} class="job-link">${job.name || job.job_id}</a>
        <${StateBadge} state=${job.state} />
        <span class="mono muted small">${job.job_id}</span>
        <span class="muted small">${job.tasks.length} tasks · ${duration((job.finished_ms || Date.now()) - job.submitted_ms)} · ${samples.length} samples</span>
      </div>`)}
    </div>
    <p class="muted small">Time is counted from each job's first sample.</p>
    ${side
      ? html`<div class="plots">
          <${Plot} name="compare-cpu-a" title="A: CPU (cores)" unit="cores" relative labels=${sets.cpu.a.labels} data=${sets.cpu.a.data} />
          <${Plot} name="compare-cpu-b" title="B: CPU (cores)" unit="cores" relative labels=${sets.cpu.b.labels} data=${sets.cpu.b.data} />
          <${Plot} name="compare-rss-a" title="A: Memory (RSS)" unit="bytes" relative labels=${sets.rss.a.labels} data=${sets.rss.a.data} />
          <${Plot} name="compare-rss-b" title="B: Memory (RSS)" unit="bytes" relative labels=${sets.rss.b.labels} data=${sets.rss.b.data} />
        </div>`
      : html`<div class="plots one">
          <${Plot} name="compare-cpu" title="CPU (cores)" unit="cores" relative pairs height=${240} labels=${sets.cpu.both.labels} data=${sets.cpu.both.data} />
          <${Plot} name="compare-rss" title="Memory (RSS)" unit="bytes" relative pairs height=${240} labels=${sets.rss.both.labels} data=${sets.rss.both.data} />
        </div>`}
  </div>`;
}
