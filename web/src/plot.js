// A uPlot chart as a Preact component. Each chart's data is published for tests (and for the
// curious, from the console) as window.__loomPlots[name] = {title, series, data}: `series` the
// labels of data[1..], data[0] the x values (seconds), as uPlot holds them.
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { useEffect, useRef } from 'preact/hooks';
import { html } from './ui.js';
import { bytes, cores } from './fmt.js';

const PALETTE = ['#4c78a8', '#f58518', '#54a24b', '#e45756', '#72b7b2', '#b279a2', '#eeca3b', '#9d755d', '#ff9da6', '#79706e'];
export const color = (i) => PALETTE[i % PALETTE.length];

const FORMATS = {
  cores: (v) => (v === null || v === undefined ? '-' : cores(v)),
  bytes: (v) => (v === null || v === undefined ? '-' : bytes(v) || '0'),
  percent: (v) => (v === null || v === undefined ? '-' : `${Math.round(v)}%`),
};

// The y axis of a plot without data.
const EMPTY_MAX = { bytes: 2 ** 30, percent: 100, cores: 1 };

const registry = () => (window.__loomPlots ||= {});

function css(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || '#888';
}

function relTicks(u, vals) {
  return vals.map((v) => {
    const s = Math.round(v);
    return s < 120 ? `${s}s` : s < 7200 ? `${Math.round(s / 60)}m` : `${(s / 3600).toFixed(1)}h`;
  });
}

// `pairs`: labels "A task" and "B task" of two jobs: one colour per task, B dashed.
function styles(labels, pairs) {
  if (!pairs) return labels.map((l, i) => ({ stroke: color(i) }));
  const tasks = [...new Set(labels.map((l) => l.slice(2)))];
  return labels.map((l) => ({ stroke: color(tasks.indexOf(l.slice(2))), dash: l.startsWith('B ') ? [6, 4] : undefined }));
}

const pad = (n) => String(n).padStart(2, '0');
const INCRS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800];

// Clock times on the x axis: 12:34:56 within an hour, 12:34 within two days, 11-29 12:34 beyond.
function timeTicks(u, vals, axis, space, incr) {
  return vals.map((v) => {
    const d = new Date(v * 1000);
    const hm = `${pad(d.getHours())}:${pad(d.getMinutes())}`;
    if (incr < 60) return `${hm}:${pad(d.getSeconds())}`;
    if (incr < 86400) return hm;
    return `${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${hm}`;
  });
}

const clock = (u, v) => {
  if (v === null || v === undefined) return '-';
  const d = new Date(v * 1000);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
};

function options(title, labels, unit, width, height, relative, pairs) {
  const look = styles(labels, pairs);
  const fmt = FORMATS[unit] || ((v) => String(v));
  const axis = { stroke: css('--muted'), grid: { stroke: css('--grid'), width: 1 }, ticks: { stroke: css('--grid'), width: 1 } };
  return {
    width,
    height,
    scales: { x: { time: !relative }, y: { range: (u, min, max) => [0, max > 0 ? max * 1.08 : EMPTY_MAX[unit] || 1] } },
    series: [
      { label: 'time', value: relative ? (u, v) => (v === null || v === undefined ? '-' : `+${Math.round(v)}s`) : clock },
      ...labels.map((l, i) => ({ label: l, ...look[i], width: 1.5, spanGaps: true, points: { size: 4 }, value: (u, v) => fmt(v) })),
    ],
    axes: [
      { ...axis, incrs: INCRS, values: relative ? relTicks : timeTicks },
      { ...axis, size: 64, values: (u, vals) => vals.map(fmt) },
    ],
    legend: { live: true },
    cursor: { drag: { x: true, y: false } },
  };
}

// props: name (the registry's key), title, labels, data ([x, ...series]), unit ('cores',
// 'bytes', 'percent'), relative (x is seconds from a start, not a date), height.
export function Plot({ name, title, labels, data, unit, relative = false, pairs = false, height = 200 }) {
  const box = useRef(null);
  const plot = useRef(null);
  const latest = useRef(data);
  latest.current = data;
  const key = `${labels.join('\n')}|${unit}|${relative}`;
  const publish = (u) => {
    registry()[name] = { title, unit, series: labels.slice(), data: u.data, points: u.data[0].length };
  };

  // (Re)created when the series change (a new task), or the theme.
  useEffect(() => {
    const el = box.current;
    let u;
    const make = () => {
      if (u) u.destroy();
      u = new uPlot(options(title, labels, unit, Math.max(200, el.clientWidth), height, relative, pairs), latest.current, el);
      plot.current = u;
      publish(u);
    };
    make();
    const ro = new ResizeObserver(() => {
      const w = Math.max(200, el.clientWidth);
      if (u && Math.abs(u.width - w) > 2) u.setSize({ width: w, height });
    });
    ro.observe(el);
    window.addEventListener('loom-theme', make);
    return () => {
      ro.disconnect();
      window.removeEventListener('loom-theme', make);
      u.destroy();
      plot.current = null;
      delete registry()[name];
    };
  }, [key, name]);

  useEffect(() => {
    const u = plot.current;
    if (!u) return;
    if (u.data !== data) u.setData(data);
    publish(u);
  }, [data]);

  const points = data[0].length;
  return html`<figure class="plot" data-plot=${name} data-points=${points} data-series=${labels.length}>
    <figcaption>${title}</figcaption>
    <div class="plot-box" ref=${box}></div>
    ${points === 0 && html`<div class="plot-empty">No samples</div>`}
  </figure>`;
}
