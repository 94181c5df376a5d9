// The page: a hash router over three views (#/ the job list, #/jobs/ID a job, #/compare/A/B),
// a top bar, and the theme. On the AM (api/info's server "am") #/ opens the AM's own job.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { html, jobHref } from './ui.js';
import { api } from './api.js';
import { JobList } from './list.js';
import { JobPage } from './job.js';
import { ComparePage } from './compare.js';
import './style.css';

function decode(s) {
  try {
    return decodeURIComponent(s);
  } catch (e) {
    return s;
  }
}

export function route(hash) {
  const h = (hash || '').replace(/^#/, '') || '/';
  const i = h.indexOf('?');
  const path = i >= 0 ? h.slice(0, i) : h;
  const q = Object.fromEntries(new URLSearchParams(i >= 0 ? h.slice(i + 1) : ''));
  const parts = path.split('/').filter(Boolean).map(decode);
  if (parts[0] === 'jobs' && parts[1]) return { view: 'job', id: parts[1], q };
  if (parts[0] === 'compare' && parts[1] && parts[2]) return { view: 'compare', a: parts[1], b: parts[2], q };
  return { view: 'list', q };
}

function useHash() {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const on = () => setHash(location.hash);
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return hash;
}

function theme() {
  return document.documentElement.dataset.theme;
}

function setTheme(t) {
  document.documentElement.dataset.theme = t;
  try {
    localStorage.setItem('loom-theme', t);
  } catch (e) {
    // private mode: the choice lasts this page only
  }
  window.dispatchEvent(new Event('loom-theme'));
}

function initTheme() {
  let t = null;
  try {
    t = localStorage.getItem('loom-theme');
  } catch (e) {
    t = null;
  }
  if (t !== 'dark' && t !== 'light') t = window.matchMedia && matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
  document.documentElement.dataset.theme = t;
}

const Logo = () => html`<svg class="logo" viewBox="0 0 24 24" width="22" height="22" aria-hidden="true">
  <path d="M4 6h16M4 12h16M4 18h16" stroke="currentColor" stroke-width="2" stroke-linecap="round" opacity="0.35" />
  <path d="M7 3v18M12 3v18M17 3v18" stroke="var(--accent)" stroke-width="2" stroke-linecap="round" />
</svg>`;

function App() {
  const hash = useHash();
  const [info, setInfo] = useState(null);
  const [, force] = useState(0);
  useEffect(() => {
    api.info().then(setInfo, () => setInfo({ server: 'portal' }));
  }, []);
  const r = route(hash);
  const am = info && info.server === 'am';
  useEffect(() => {
    if (am && r.view === 'list' && info.job_id) location.replace(jobHref(info.job_id));
  }, [am, r.view]);
  useEffect(() => {
    document.title = r.view === 'job' ? `${r.id} · Loom` : r.view === 'compare' ? 'Compare · Loom' : 'Jobs · Loom';
  }, [hash]);

  let body;
  if (!info) body = html`<div class="page muted">Loading…</div>`;
  else if (r.view === 'job') body = html`<${JobPage} key=${r.id} id=${r.id} info=${info} />`;
  else if (r.view === 'compare') body = html`<${ComparePage} a=${r.a} b=${r.b} />`;
  else if (am) body = html`<div class="page muted">Opening the job…</div>`;
  else body = html`<${JobList} q=${r.q} />`;

  return html`<div class="app" data-server=${info ? info.server : ''}>
    <nav class="topbar">
      <a class="brand" href="#/"><${Logo} /><span>loom</span></a>
      ${!am && html`<a class=${`nav ${r.view === 'list' ? 'active' : ''}`} href="#/">Jobs</a>`}
      ${r.view === 'job' && html`<span class="crumb mono">${r.id}</span>`}
      <span class="spacer"></span>
      <a class="nav-metrics muted small" href="metrics" title="Prometheus text format">metrics</a>
      ${info && html`<span class="server muted small">${info.server === 'am' ? 'live dashboard' : 'portal'}${info.version ? ` · ${info.version}` : ''}</span>`}
      <button class="btn icon theme-btn" title="light / dark" aria-label="switch theme"
        onClick=${() => { setTheme(theme() === 'dark' ? 'light' : 'dark'); force((n) => n + 1); }}>${theme() === 'dark' ? '☀' : '☾'}</button>
    </nav>
    ${body}
  </div>`;
}

initTheme();
render(html`<${App} />`, document.getElementById('app'));
