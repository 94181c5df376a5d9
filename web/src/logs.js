// A task's log: the last 64 KiB, then (follow) what was written since, asked for every 2 s from
// offset + the bytes already read.
import { useEffect, useRef, useState } from 'preact/hooks';
import { html } from './ui.js';
import { api } from './api.js';
import { bytes } from './fmt.js';
import { compareTasks } from './model.js';

const TAIL = 65536;
const KEEP = 1 << 21;  // characters kept on the page
const utf8 = new TextEncoder();

// Where the next read starts: the server's `next` where it gives one, else offset + the bytes
// of data (exact for UTF-8 output).
const after = (r) => (typeof r.next === 'number' ? r.next : r.offset + utf8.encode(r.data || '').length);

export function LogsPanel({ id, live }) {
  const [logs, setLogs] = useState([]);
  const [sel, setSel] = useState('');
  const [text, setText] = useState('');
  const [cut, setCut] = useState(false);
  const [follow, setFollow] = useState(live);
  const [error, setError] = useState(null);
  const pre = useRef(null);
  const pos = useRef(0);
  const stick = useRef(true);

  // The list of logs, again every 5 s while the job runs (tasks start, files appear).
  useEffect(() => {
    let timer;
    let stop = false;
    let fails = 0;
    const load = async () => {
      try {
        const r = await api.logs(id);
        if (stop) return;
        const list = (r.logs || []).slice().sort((a, b) => compareTasks(a.task, b.task) || (a.name < b.name ? -1 : 1));
        setLogs(list);
        setSel((cur) => cur || pickDefault(list));
        fails = 0;
      } catch (e) {
        if (!stop) setError(e);
        fails++;
      }
      if (live && !stop) timer = setTimeout(load, Math.min(30000, 5000 * 2 ** fails));
    };
    load();
    return () => {
      stop = true;
      clearTimeout(timer);
    };
  }, [id, live]);

  useEffect(() => setFollow(live), [live]);

  // The tail of the chosen log, then follow.
  useEffect(() => {
    if (!sel) return undefined;
    const [task, name] = sel.split('\n');
    let stop = false;
    let timer;
    let failures = 0;
    setText('');
    setCut(false);
    setError(null);
    stick.current = true;
    const tail = async () => {
      try {
        const r = await api.log(id, task, name, -TAIL);
        if (stop) return;
        pos.current = after(r);
        setCut(r.offset > 0);
        setText(r.data || '');
        if (follow) timer = setTimeout(more, 2000);
      } catch (e) {
        if (!stop) setError(e);
      }
    };
    const more = async () => {
      try {
        for (let i = 0; i < 16 && !stop; i++) {
          const r = await api.log(id, task, name, pos.current);
          if (stop) return;
          if (r.data) {
            pos.current = after(r);
            setText((t) => {
              const all = t + r.data;
              if (all.length > KEEP) {
                setCut(true);
                return all.slice(all.length - KEEP);
              }
              return all;
            });
          }
          if (r.eof !== false || !r.data) break;
        }
        setError(null);
        failures = 0;
      } catch (e) {
        if (!stop) setError(e);
        failures++;
      }
      // Less and less often while the server does not answer.
      if (!stop) timer = setTimeout(more, Math.min(30000, 2000 * 2 ** failures));
    };
    tail();
    return () => {
      stop = true;
      clearTimeout(timer);
    };
  }, [id, sel, follow]);

  // Keep the end in view while following, unless the reader scrolled up.
  useEffect(() => {
    const el = pre.current;
    if (el && stick.current) el.scrollTop = el.scrollHeight;
  }, [text]);
  const onScroll = () => {
    const el = pre.current;
    if (el) stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < 24;
  };

  const current = logs.find((l) => `${l.task}\n${l.name}` === sel);
  return html`<div class="logs">
    <div class="toolbar">
      <select class="log-select" value=${sel} onChange=${(e) => setSel(e.currentTarget.value)} aria-label="log">
        ${logs.map((l) => html`<option value=${`${l.task}\n${l.name}`}>${l.task} · ${l.name}${typeof l.size === 'number' ? ` (${bytes(l.size) || 'empty'})` : ''}</option>`)}
      </select>
      <label class="check"><input type="checkbox" class="log-follow" checked=${follow} onChange=${(e) => setFollow(e.currentTarget.checked)} /> follow</label>
      ${current && typeof current.size === 'number' && html`<span class="muted">${bytes(current.size) || '0 B'}</span>`}
      ${error && html`<span class="error-inline">${error.message}</span>`}
    </div>
    ${cut && html`<div class="muted small">… earlier output not shown (the last ${bytes(TAIL)} and what followed)</div>`}
    <pre class="log-text" ref=${pre} onScroll=${onScroll}>${text || (sel ? '' : 'No logs')}</pre>
  </div>`;
}

function pickDefault(list) {
  const l = list.find((x) => x.name === 'stdout' && x.size > 0) || list.find((x) => x.name === 'stdout') || list[0];
  return l ? `${l.task}\n${l.name}` : '';
}

export function ConfigTable({ id }) {
  const [entries, setEntries] = useState(null);
  const [error, setError] = useState(null);
  const [filter, setFilter] = useState('');
  useEffect(() => {
    let stop = false;
    api.config(id).then((r) => !stop && setEntries(r.entries || []), (e) => !stop && setError(e));
    return () => { stop = true; };
  }, [id]);
  if (error) return html`<div class="error">${error.message}</div>`;
  if (!entries) return html`<div class="muted">Loading…</div>`;
  const f = filter.trim().toLowerCase();
  const shown = f ? entries.filter((e) => `${e.key}\n${e.value}\n${e.source}`.toLowerCase().includes(f)) : entries;
  return html`<div class="config">
    <div class="toolbar">
      <input type="search" class="config-filter" placeholder="Filter keys, values, sources" value=${filter} onInput=${(e) => setFilter(e.currentTarget.value)} />
      <span class="muted">${shown.length} of ${entries.length}</span>
    </div>
    <div class="table-wrap config-wrap">
      <table class="table config-table">
        <thead><tr><th>Key</th><th>Value</th><th>Source</th></tr></thead>
        <tbody>
          ${shown.map((e) => html`<tr data-key=${e.key}><td class="mono">${e.key}</td><td class="mono wrap">${e.value}</td><td class="muted">${e.source}</td></tr>`)}
        </tbody>
      </table>
    </div>
  </div>`;
}
