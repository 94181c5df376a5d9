// A job's page, the same for the AM's live dashboard and the portal: header, tasks, timeline,
// plots, logs and configuration. While the job is not final it asks every 2 s for the job,
// the events after the last it has and the samples newer than the last it has, and updates in
// place.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { html, StateBadge, ExtLink, ErrorBox, Empty } from './ui.js';
import { api } from './api.js';
import { ago, bytes, cores, datetime, duration, time, TERMINAL } from './fmt.js';
import { alignSeries, buildTimeline, latestSamples, pickCpu, pickGpuMem, pickGpuUtil, pickRss, taskFacts } from './model.js';
import { Plot } from './plot.js';
import { Timeline } from './timeline.js';
import { ConfigTable, LogsPanel } from './logs.js';

export const POLL_MS = 2000;

// The job, its events and its samples, kept current while the job runs.
export function useJobRecord(id) {
  const [job, setJob] = useState(null);
  const [error, setError] = useState(null);
  const [stale, setStale] = useState(null);
  const [version, setVersion] = useState(0);
  const [updated, setUpdated] = useState(0);
  const rec = useRef(null);

  useEffect(() => {
    const r = (rec.current = { next: 0, lastMs: undefined, seen: new Set(), events: [], samples: [] });
    setJob(null);
    setError(null);
    setStale(null);
    let stop = false;
    let timer;
    const tick = async () => {
      try {
        // The job first: when it says final, the events and samples asked for after it are all.
        const j = await api.job(id);
        const [evs, m] = await Promise.all([
          (async () => {
            // A long record comes in chunks ("more"): the rest at once.
            const out = [];
            let after = r.next;
            for (let i = 0; i < 50; i++) {
              const ev = await api.events(id, after);
              out.push(ev);
              const n = (ev.events || []).length;
              after = typeof ev.next === 'number' ? ev.next : after + n;
              if (!ev.more || n === 0) break;
            }
            return out;
          })(),
          api.metrics(id, r.lastMs === undefined ? undefined : r.lastMs - 1),
        ]);
        if (stop) return;
        let changed = false;
        for (const ev of evs) {
          if (ev.events && ev.events.length) {
            r.events.push(...ev.events);
            changed = true;
          }
          if (typeof ev.next === 'number') r.next = ev.next;
        }
        // Only the newest samples came (the server's cap): the plots start later than the job.
        if (m.truncated && r.lastMs === undefined) r.truncated = true;
        for (const s of m.samples || []) {
          const k = `${s.task}@${s.ms}`;
          if (r.seen.has(k)) continue;
          r.seen.add(k);
          r.samples.push(s);
          r.lastMs = r.lastMs === undefined ? s.ms : Math.max(r.lastMs, s.ms);
          changed = true;
        }
        if (changed) {
          r.samples.sort((a, b) => a.ms - b.ms);
          setVersion((v) => v + 1);
        }
        setJob(j);
        setStale(null);
        r.failures = 0;
        setUpdated(Date.now());
        if (!j.final) timer = setTimeout(tick, POLL_MS);
      } catch (e) {
        if (stop) return;
        if (rec.current.loaded) {
          // The server stopped answering (an AM exits once its job ended): ask again less and
          // less often, up to every 30 s.
          r.failures = (r.failures || 0) + 1;
          setStale({ message: e.message, failures: r.failures });
          timer = setTimeout(tick, Math.min(30000, POLL_MS * 2 ** r.failures));
        } else {
          setError(e);
        }
        return;
      }
      rec.current.loaded = true;
    };
    tick();
    return () => {
      stop = true;
      clearTimeout(timer);
    };
  }, [id]);

  const r = rec.current;
  return { job, error, stale, version, updated, events: r ? r.events : [], samples: r ? r.samples : [], truncated: !!(r && r.truncated) };
}

export function JobPage({ id, info }) {
  const { job, error, stale, version, updated, events, samples, truncated } = useJobRecord(id);
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    if (!job || job.final) return undefined;
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, [job && job.final]);

  const timeline = useMemo(() => (job ? buildTimeline(events, job, Date.now()) : null), [version, job]);
  const facts = useMemo(() => taskFacts(events), [version]);
  const latest = useMemo(() => latestSamples(samples), [version]);
  const plots = useMemo(() => {
    const gpu = samples.some((s) => s.gpus && s.gpus.length);
    return {
      cpu: alignSeries(samples, pickCpu),
      rss: alignSeries(samples, pickRss),
      gpuUtil: gpu ? alignSeries(samples, pickGpuUtil) : null,
      gpuMem: gpu ? alignSeries(samples, pickGpuMem) : null,
    };
  }, [version]);

  if (error) return html`<div class="page"><${ErrorBox} error=${error} /></div>`;
  if (!job) return html`<div class="page"><div class="muted">Loading ${id}…</div></div>`;
  const live = !job.final;
  return html`<div class="page job-page" data-job=${job.job_id} data-final=${String(!!job.final)}>
    <${JobHeader} job=${job} info=${info} live=${live} stale=${stale} updated=${updated} now=${now} />
    <section class="card">
      <h2>Tasks <span class="count">${job.tasks.length}</span></h2>
      <${TaskTable} job=${job} facts=${facts} latest=${latest} now=${now} />
    </section>
    <section class="card">
      <h2>Timeline</h2>
      <${Timeline} timeline=${timeline} />
    </section>
    <section class="card">
      <h2>Resources <span class="count">${samples.length} samples</span></h2>
      ${truncated && html`<div class="muted small">The newest samples only: the record holds more than one answer gives.</div>`}
      <div class="plots">
        <${Plot} name="cpu" title="CPU (cores)" unit="cores" labels=${plots.cpu.labels} data=${plots.cpu.data} />
        <${Plot} name="rss" title="Memory (RSS)" unit="bytes" labels=${plots.rss.labels} data=${plots.rss.data} />
        ${plots.gpuUtil && html`<${Plot} name="gpu-util" title="GPU utilisation" unit="percent" labels=${plots.gpuUtil.labels} data=${plots.gpuUtil.data} />`}
        ${plots.gpuMem && html`<${Plot} name="gpu-mem" title="GPU memory" unit="bytes" labels=${plots.gpuMem.labels} data=${plots.gpuMem.data} />`}
      </div>
    </section>
    <section class="card">
      <h2>Logs</h2>
      <${LogsPanel} id=${job.job_id} live=${live} />
    </section>
    <section class="card">
      <h2>Configuration</h2>
      <${ConfigTable} id=${job.job_id} />
    </section>
  </div>`;
}

function JobHeader({ job, info, live, stale, updated, now }) {
  const end = job.finished_ms || (live ? now : 0);
  const warnings = job.warnings || [];
  return html`<header class="job-head">
    <div class="job-title">
      <h1><span class="job-name">${job.name || job.job_id}</span></h1>
      <${StateBadge} state=${job.state} />
      ${live && html`<span class=${stale ? 'live live-stale' : 'live'} title=${stale ? stale.message : `updated ${time(updated)}`}>${stale ? 'reconnecting' : 'live'}</span>`}
    </div>
    <dl class="facts">
      <div><dt>Job</dt><dd class="mono job-id">${job.job_id}</dd></div>
      ${job.user && html`<div><dt>User</dt><dd>${job.user}</dd></div>`}
      <div><dt>Backend</dt><dd>${job.backend}${job.backend_id ? html` <span class="mono muted">${job.backend_id}</span>` : ''}</dd></div>
      ${job.backend_state && html`<div><dt>Backend state</dt><dd>${job.backend_state}</dd></div>`}
      <div><dt>Submitted</dt><dd>${datetime(job.submitted_ms)}</dd></div>
      <div><dt>Duration</dt><dd>${duration(end - job.submitted_ms) || '-'}</dd></div>
      ${job.attempt > 1 && html`<div><dt>Attempt</dt><dd>${job.attempt}</dd></div>`}
      ${job.state === 'QUEUED' && html`<div><dt>Queue</dt><dd>#${job.queue_position} ${job.queue_reason || ''}</dd></div>`}
      ${job.tensorboard_url && html`<div><dt>TensorBoard</dt><dd class="tensorboard"><${ExtLink} href=${job.tensorboard_url} /></dd></div>`}
      ${job.tracking_url && html`<div><dt>Tracking</dt><dd class="tracking"><${ExtLink} href=${job.tracking_url} /></dd></div>`}
      ${info && info.server === 'portal' && job.live && job.dashboard_url && html`<div><dt>Dashboard</dt><dd><${ExtLink} href=${job.dashboard_url} /></dd></div>`}
    </dl>
    ${stale && stale.failures >= 2 && html`<div class="gone" role="status">${info && info.server === 'am'
      ? `This dashboard stopped answering (${stale.message}): its AM has exited, as it does once the job ended or was stopped. The job's record stays: loom status ${job.job_id}, or loom portal.`
      : `The server stopped answering (${stale.message}); asking again.`}</div>`}
    ${job.diagnostics && html`<pre class=${`diagnostics diag-${String(job.state).toLowerCase()}`}>${job.diagnostics}</pre>`}
    ${warnings.length > 0 && html`<ul class="warnings">${warnings.map((w) => html`<li>${typeof w === 'string' ? w : JSON.stringify(w)}</li>`)}</ul>`}
  </header>`;
}

function gpuText(gpus) {
  if (!gpus || !gpus.length) return '';
  return gpus.map((g) => `${g.i ?? g.index}: ${g.util ?? g.utilization_percent}% ${bytes(g.mem ?? g.memory_bytes)}`).join(', ');
}

function TaskTable({ job, facts, latest, now }) {
  if (!job.tasks.length) return html`<${Empty}>No tasks yet</${Empty}>`;
  const anyGpu = job.tasks.some((t) => (latest[t.task] && latest[t.task].gpus) || (t.metrics && t.metrics.gpus) || t.gpus);
  return html`<div class="table-wrap"><table class="table tasks">
    <thead><tr>
      <th>Task</th><th>State</th><th>Host / address</th><th>Container</th><th class="num">Restarts</th><th class="num">Exit</th>
      <th class="num">RSS</th><th class="num">CPU</th>${anyGpu && html`<th>GPU</th>`}<th>Last sample</th>
    </tr></thead>
    <tbody>
      ${job.tasks.map((t) => {
        const f = facts[t.task] || {};
        const s = latest[t.task];
        const done = t.finished_ms > 0 || TERMINAL.has(t.state);
        const m = t.metrics || {};
        const rss = done ? t.peak_rss_bytes : m.rss_bytes ?? (s && s.rss) ?? t.rss_bytes;
        const cpu = done ? t.avg_cpu_cores : m.cpu_cores ?? (s && s.cpu);
        const lastMs = Math.max((s && s.ms) || 0, m.ms || 0);
        const host = t.address || f.address || f.host || '';
        return html`<tr data-task=${t.task} data-state=${t.state}>
          <td class="mono" data-col="task">${t.task}</td>
          <td data-col="state"><${StateBadge} state=${t.state} />${t.waiting ? html` <span class="muted small">${t.waiting}</span>` : ''}${t.diagnostics ? html`<div class="muted small wrap">${t.diagnostics}</div>` : ''}</td>
          <td class="mono" data-col="host">${host}${f.host && host !== f.host && !host.startsWith(f.host) ? html` <span class="muted">(${f.host})</span>` : ''}</td>
          <td class="mono small" data-col="container">${t.container || f.container || ''}</td>
          <td class="num" data-col="restarts">${t.restarts || 0}</td>
          <td class="num" data-col="exit">${done ? t.exit_code : ''}</td>
          <td class="num" data-col="rss" data-value=${rss || 0} title=${done ? 'peak' : 'now'}>${bytes(rss)}</td>
          <td class="num" data-col="cpu" data-value=${cpu ?? ''} title=${done ? `average${t.peak_cpu_cores ? `, peak ${cores(t.peak_cpu_cores)}` : ''}` : 'now'}>${cores(cpu)}</td>
          ${anyGpu && html`<td class="small" data-col="gpu">${gpuText((s && s.gpus) || m.gpus) || (t.gpus ? `gpus ${[].concat(t.gpus).join(',')}` : '')}</td>`}
          <td class="small" data-col="last" data-value=${lastMs || ''} title=${datetime(lastMs)}>${lastMs ? (done ? time(lastMs) : ago(lastMs, now)) : ''}</td>
        </tr>`;
      })}
    </tbody>
  </table></div>`;
}
