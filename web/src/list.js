// The job list: filters (state, user, name, backend, submit dates) kept in the URL
// (#/?state=FAILED&user=ann&offset=50), the counts of each state under the other filters, and
// paging through api/jobs's offset and limit.
import { useEffect, useRef, useState } from 'preact/hooks';
import { html, StateBadge, ErrorBox, jobHref } from './ui.js';
import { api } from './api.js';
import { dateToMs, datetime, duration, JOB_STATES, TERMINAL } from './fmt.js';

const FIELDS = ['state', 'user', 'name', 'backend', 'from', 'to', 'offset', 'limit'];

export function setQuery(q, replace = false) {
  const parts = [];
  for (const k of FIELDS) if (q[k] !== undefined && q[k] !== '' && q[k] !== null) parts.push(`${k}=${encodeURIComponent(q[k])}`);
  const hash = `#/${parts.length ? `?${parts.join('&')}` : ''}`;
  if (replace) history.replaceState(null, '', hash);
  else location.hash = hash;
  if (replace) window.dispatchEvent(new HashChangeEvent('hashchange'));
}

function filtersOf(q) {
  return {
    state: q.state || undefined,
    user: q.user || undefined,
    name: q.name || undefined,
    backend: q.backend || undefined,
    since: dateToMs(q.from),
    until: dateToMs(q.to, true),
  };
}

// A text input that writes its value to the URL once typing pauses.
function TextFilter({ q, field, placeholder }) {
  const [v, setV] = useState(q[field] || '');
  const timer = useRef(null);
  useEffect(() => setV(q[field] || ''), [q[field]]);
  const onInput = (e) => {
    const value = e.currentTarget.value;
    setV(value);
    clearTimeout(timer.current);
    timer.current = setTimeout(() => setQuery({ ...q, [field]: value, offset: undefined }, true), 300);
  };
  return html`<input type="search" class=${`filter-${field}`} name=${field} placeholder=${placeholder} value=${v} onInput=${onInput} />`;
}

export function JobList({ q }) {
  const [page, setPage] = useState(null);
  const [counts, setCounts] = useState({});
  const [error, setError] = useState(null);
  const [picked, setPicked] = useState([]);
  const [tick, setTick] = useState(0);
  const limit = Math.min(500, Math.max(1, Number(q.limit) || 50));
  const offset = Math.max(0, Number(q.offset) || 0);
  const filters = filtersOf(q);
  const key = JSON.stringify([filters, offset, limit]);

  useEffect(() => {
    let stop = false;
    api.jobs({ ...filters, offset, limit }).then(
      (r) => { if (!stop) { setPage(r); setError(null); } },
      (e) => { if (!stop) setError(e); });
    // Each state's count under the other filters.
    const others = { ...filters, state: undefined, limit: 1 };
    Promise.all(JOB_STATES.map((s) => api.jobs({ ...others, state: s }).then((r) => [s, r.total], () => [s, undefined]))).then(
      (pairs) => { if (!stop) setCounts(Object.fromEntries(pairs)); });
    return () => { stop = true; };
  }, [key, tick]);

  // While jobs on the page still run, look again every 5 s.
  const running = page && page.jobs.some((j) => !TERMINAL.has(j.state));
  useEffect(() => {
    if (!running) return undefined;
    const t = setTimeout(() => setTick((n) => n + 1), 5000);
    return () => clearTimeout(t);
  }, [running, page]);

  const states = new Set((q.state || '').split(',').filter(Boolean));
  const toggleState = (s) => {
    const next = new Set(states);
    if (next.has(s)) next.delete(s);
    else next.add(s);
    setQuery({ ...q, state: [...next].join(','), offset: undefined });
  };
  const togglePick = (id) => setPicked((p) => (p.includes(id) ? p.filter((x) => x !== id) : [...p, id].slice(-2)));
  const total = page ? page.total : 0;
  const filtered = FIELDS.some((k) => k !== 'offset' && k !== 'limit' && q[k]);

  return html`<div class="page list-page">
    <div class="page-head">
      <h1>Jobs ${page && html`<span class="count total">${total}</span>`}</h1>
      <button class="btn compare-btn" disabled=${picked.length !== 2}
        onClick=${() => { location.hash = `#/compare/${encodeURIComponent(picked[0])}/${encodeURIComponent(picked[1])}`; }}>
        Compare${picked.length ? ` (${picked.length}/2)` : ''}</button>
    </div>
    <div class="state-chips" role="group" aria-label="states">
      ${JOB_STATES.map((s) => html`<button type="button" class=${`chip ${states.has(s) ? 'on' : ''}`} data-state=${s} aria-pressed=${states.has(s)} onClick=${() => toggleState(s)}>
        <i class=${`dot seg-${s.toLowerCase()}`}></i>${s.toLowerCase()} <b class="chip-count">${counts[s] ?? ''}</b></button>`)}
    </div>
    <form class="filters" onSubmit=${(e) => e.preventDefault()}>
      <${TextFilter} q=${q} field="name" placeholder="Name contains" />
      <${TextFilter} q=${q} field="user" placeholder="User" />
      <select name="backend" class="filter-backend" value=${q.backend || ''} onChange=${(e) => setQuery({ ...q, backend: e.currentTarget.value, offset: undefined })}>
        <option value="">any backend</option><option value="local">local</option><option value="yarn">yarn</option>
      </select>
      <label>from <input type="date" name="from" class="filter-from" value=${q.from || ''} onChange=${(e) => setQuery({ ...q, from: e.currentTarget.value, offset: undefined })} /></label>
      <label>to <input type="date" name="to" class="filter-to" value=${q.to || ''} onChange=${(e) => setQuery({ ...q, to: e.currentTarget.value, offset: undefined })} /></label>
      ${filtered && html`<button type="button" class="btn link" onClick=${() => setQuery({})}>clear</button>`}
    </form>
    <${ErrorBox} error=${error} />
    ${page && html`<div class="table-wrap"><table class="table jobs">
      <thead><tr><th></th><th>Job</th><th>User</th><th>Backend</th><th>State</th><th>Submitted</th><th class="num">Duration</th><th class="num">Tasks</th></tr></thead>
      <tbody>
        ${page.jobs.map((j) => html`<tr data-job=${j.job_id} data-state=${j.state}>
          <td><input type="checkbox" aria-label="compare" checked=${picked.includes(j.job_id)} onChange=${() => togglePick(j.job_id)} /></td>
          <td class="job-cell">
            <a href=${jobHref(j.job_id)} class="job-link">${j.name || j.job_id}</a>
            <div class="mono muted small">${j.job_id}</div>
            ${j.diagnostics && !['SUCCEEDED', 'RUNNING'].includes(j.state) && html`<div class="muted small diag-line" title=${j.diagnostics}>${j.diagnostics}</div>`}
          </td>
          <td data-col="user">${j.user}</td>
          <td data-col="backend">${j.backend}</td>
          <td data-col="state"><${StateBadge} state=${j.state} /></td>
          <td data-col="submitted" class="nowrap">${datetime(j.submitted_ms)}</td>
          <td data-col="duration" class="num">${duration((j.finished_ms || (TERMINAL.has(j.state) ? 0 : Date.now())) - j.submitted_ms)}</td>
          <td data-col="tasks" class="num">${j.tasks}</td>
        </tr>`)}
      </tbody>
    </table></div>
    ${page.jobs.length === 0 && html`<div class="empty">${filtered ? 'No job matches these filters' : 'No jobs yet'}</div>`}
    <div class="pager">
      <span class="muted">${total ? `${offset + 1}–${Math.min(total, offset + page.jobs.length)} of ${total}` : ''}</span>
      <button class="btn prev" disabled=${offset === 0} onClick=${() => setQuery({ ...q, offset: Math.max(0, offset - limit) || undefined })}>‹ Newer</button>
      <button class="btn next" disabled=${offset + limit >= total} onClick=${() => setQuery({ ...q, offset: offset + limit })}>Older ›</button>
      <select class="page-size" value=${String(limit)} onChange=${(e) => setQuery({ ...q, limit: e.currentTarget.value, offset: undefined })}>
        ${[25, 50, 100, 200].map((n) => html`<option value=${String(n)}>${n} a page</option>`)}
      </select>
    </div>`}
  </div>`;
}
