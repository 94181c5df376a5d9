// A stand-in for `loom portal` (and, with --am JOB, for an AM's dashboard) for developing the
// page: it serves web/dist and answers the JSON API (README "The JSON API") from jobs made up
// here, one of which runs while the server does (it finishes after --run-seconds). The tests
// proper run against the real `loom portal`; this serves only to work on the page offline.
//
//   node fixture_server.mjs [--port 0] [--dist ../../web/dist] [--am JOB [--linger-ms 5000]] [--run-seconds 60]
//   node fixture_server.mjs --api URL                     this page (--dist), the API of a real
//                                                         server at URL (a page newer than a binary)
//   node fixture_server.mjs --loom LOOM --loom-home DIR   real records: the jobs under DIR/jobs
//                                                         (the job itself from `LOOM status --json`)
//
// Prints "Portal: http://127.0.0.1:PORT/" first, as `loom portal` does.
import { createServer } from 'node:http';
import { readFileSync, existsSync, statSync, readdirSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { dirname, extname, join, normalize, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const argv = process.argv.slice(2);
const arg = (n, d) => (argv.includes(n) ? argv[argv.indexOf(n) + 1] : d);
const dist = resolve(arg('--dist', process.env.LOOM_WEB_DIST || join(here, '../../web/dist')));
const amJob = arg('--am', '');
const runSeconds = Number(arg('--run-seconds', '60'));
const port = Number(arg('--port', '0'));
// As an AM (--am): how long it keeps answering after its job ended, then it exits.
const lingerMs = Number(arg('--linger-ms', '5000'));

const T0 = Date.now();
const MIN = 60000;

function taskView(task, state, o = {}) {
  return {
    task, state, address: o.address ?? '', exit_code: o.exit_code ?? 0, diagnostics: o.diagnostics ?? '',
    peak_rss_bytes: o.peak ?? 0, rss_bytes: o.rss ?? 0, restarts: o.restarts ?? 0,
    started_ms: o.started ?? 0, finished_ms: o.finished ?? 0, ...(o.extra || {}),
  };
}

// A finished job with `n` tasks that ran from `start` for `ms`, samples every `every` ms.
function finishedJob({ id, name, user = 'ann', backend = 'local', state = 'SUCCEEDED', start, ms, n = 2, every = 1000, gpus = 0, diagnostics = '', exit = 0, restartAt = 0 }) {
  const events = [{ ts: start, event: 'JOB_SUBMITTED', job_id: id, name, backend, tasks: Array.from({ length: n }, (_, i) => `worker:${i}`) }];
  events.push({ ts: start + 150, event: 'AM_STARTED', pid: 4242, address: '127.0.0.1:40001', backend, status_url: 'http://127.0.0.1:40002/' });
  const samples = [];
  const tasks = [];
  const end = start + ms;
  for (let i = 0; i < n; i++) {
    const task = `worker:${i}`;
    const addr = `10.0.0.${i + 11}:${29500 + i}`;
    events.push({ ts: start + 200, event: 'TASK_STATE', task, state: 'PENDING' });
    events.push({ ts: start + 400 + i * 50, event: 'TASK_STATE', task, state: 'LAUNCHED', container: `container_${id}_01_00000${i + 2}`, host: `node${i + 1}` });
    events.push({ ts: start + 900 + i * 80, event: 'TASK_STATE', task, state: 'REGISTERED', address: addr });
    events.push({ ts: start + 1300, event: 'TASK_STATE', task, state: 'RUNNING', address: addr });
    let peak = 0;
    for (let t = start + 1500, k = 0; t < end; t += every, k++) {
      const cpu = 0.6 + 0.35 * Math.sin(k / 4 + i) + (i === 0 ? 0.2 : 0);
      const rss = Math.round((180 + 40 * Math.log1p(k) + i * 25) * 1048576);
      peak = Math.max(peak, rss);
      const s = { ms: t + i * 7, task, rss };
      if (k > 0) s.cpu = Math.round(cpu * 100) / 100;
      if (gpus) s.gpus = Array.from({ length: gpus }, (_, g) => ({ i: g, util: Math.round(60 + 30 * Math.sin(k / 3 + g)), mem: (8 + g + k / 50) * 2 ** 30 }));
      samples.push(s);
    }
    if (restartAt && i === 1) {
      events.push({ ts: start + restartAt, event: 'TASK_STATE', task, state: 'FAILED', exit_code: 137 });
      events.push({ ts: start + restartAt + 5, event: 'TASK_RESTARTING', task, exit_code: 137, restart: 1 });
      events.push({ ts: start + restartAt + 10, event: 'TASK_STATE', task, state: 'LAUNCHED' });
      events.push({ ts: start + restartAt + 600, event: 'TASK_STATE', task, state: 'RUNNING', address: addr });
    }
    const tstate = state === 'FAILED' && i === 0 ? 'FAILED' : state === 'FAILED' ? 'KILLED' : state;
    events.push({ ts: end, event: 'TASK_STATE', task, state: tstate, exit_code: tstate === 'FAILED' ? exit : tstate === 'KILLED' ? 143 : 0, peak_rss_bytes: peak });
    tasks.push(taskView(task, tstate, { address: addr, exit_code: tstate === 'FAILED' ? exit : tstate === 'KILLED' ? 143 : 0, peak, started: start + 1300, finished: end, restarts: restartAt && i === 1 ? 1 : 0,
      extra: { container: `container_${id}_01_00000${i + 2}`, avg_cpu_cores: 0.71 + i / 10, peak_cpu_cores: 1.22 } }));
  }
  events.push({ ts: end + 20, event: 'JOB_FINISHED', state, diagnostics });
  events.sort((a, b) => a.ts - b.ts);
  samples.sort((a, b) => a.ms - b.ms);
  return { id, user, samples, events, finished: true,
    view: () => ({ job_id: id, name, backend, state, diagnostics, submitted_ms: start, finished_ms: end + 20, final: true, attempt: 1, tasks, user, live: false }) };
}

// The running job: its events and samples appear as time goes on; it ends after runSeconds.
function liveJob(id) {
  const start = T0 - 3000;
  const endAt = T0 + runSeconds * 1000;
  const all = finishedJob({ id, name: 'live-ddp', start, ms: endAt - start, every: 500, gpus: 1 });
  const final = all.view();
  return {
    id, user: 'ann',
    get events() { return all.events.filter((e) => e.ts <= Date.now()); },
    get samples() { return all.samples.filter((s) => s.ms <= Date.now()); },
    view() {
      const now = Date.now();
      if (now >= endAt + 20) return { ...final, live: amJob === id };
      const latest = {};
      for (const s of this.samples) latest[s.task] = s;
      return {
        ...final, state: 'RUNNING', final: false, finished_ms: 0, live: true, tensorboard_url: 'http://127.0.0.1:6006/',
        dashboard_url: 'http://127.0.0.1:40002/',
        tasks: final.tasks.map((t) => {
          const s = latest[t.task];
          const running = now >= start + 1300;
          return { ...t, state: running ? 'RUNNING' : 'PENDING', exit_code: 0, finished_ms: 0, peak_rss_bytes: 0, avg_cpu_cores: undefined, peak_cpu_cores: undefined,
            metrics: s && { ms: s.ms, cpu_cores: s.cpu, rss_bytes: s.rss, gpus: (s.gpus || []).map((g) => ({ index: g.i, utilization_percent: g.util, memory_bytes: g.mem })) } };
        }),
      };
    },
  };
}

// A real job record under $LOOM_HOME/jobs/ID (history/job_dir.h).
function recordJob(loom, dir, id) {
  const root = join(dir, 'jobs', id);
  const lines = (f) => (existsSync(join(root, f)) ? readFileSync(join(root, f), 'utf8').split('\n').filter((l) => l.trim()).flatMap((l) => { try { return [JSON.parse(l)]; } catch (e) { return []; } }) : []);
  const meta = JSON.parse(readFileSync(join(root, 'job.json'), 'utf8'));
  return {
    id, user: meta.user, record: root,
    get events() { return lines('events.jsonl'); },
    get samples() { return lines('metrics.jsonl'); },
    view() {
      // `loom status` exits 1 for a failed or killed job: its output is what counts.
      const v = JSON.parse(spawnSync(loom, ['status', '--json', id], { env: { ...process.env, LOOM_HOME: dir } }).stdout.toString());
      return { ...v, user: meta.user, live: !v.final };
    },
    config() {
      const xml = readFileSync(join(root, 'config.xml'), 'utf8');
      const un = (s) => s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&amp;/g, '&');
      return [...xml.matchAll(/<property>\s*<name>([^<]*)<\/name>\s*<value>([^<]*)<\/value>\s*(?:<source>([^<]*)<\/source>)?/g)]
        .map((m) => ({ key: un(m[1]), value: /password|secret|token|credential/i.test(m[1]) ? '<redacted>' : un(m[2]), source: un(m[3] || '') }));
    },
    logFiles() {
      const out = [['am', 'am.log', join(root, 'am.log')]];
      const tdir = join(root, 'tasks');
      for (const t of existsSync(tdir) ? readdirSync(tdir).sort() : []) {
        const task = t.replace(/-(\d+)$/, ':$1');
        for (const name of ['stdout', 'stderr', 'executor.log']) out.push([task, name, join(tdir, t, name)]);
      }
      return out.filter(([, , f]) => existsSync(f));
    },
  };
}

const jobs = new Map();
const add = (j) => jobs.set(j.id, j);
const loomBin = arg('--loom', '');
const loomHome = arg('--loom-home', '');
if (loomHome) {
  for (const id of readdirSync(join(loomHome, 'jobs'))) {
    if (existsSync(join(loomHome, 'jobs', id, 'job.json'))) add(recordJob(loomBin, loomHome, id));
  }
}
if (!loomHome) {
add(finishedJob({ id: 'job_20261129093000_d0d0', name: 'digits-ddp', start: T0 - 50 * MIN, ms: 42000, restartAt: 20000 }));
add(finishedJob({ id: 'job_20261129094000_fa11', name: 'fails', user: 'bob', state: 'FAILED', start: T0 - 40 * MIN, ms: 6000, exit: 1, diagnostics: 'worker:0 exited with code 1' }));
add(finishedJob({ id: 'job_20261129095000_k111', name: 'sleeps', state: 'KILLED', start: T0 - 30 * MIN, ms: 9000, diagnostics: 'killed by loom kill (user ann)' }));
add(finishedJob({ id: 'job_20261129096000_0bad', name: '<script>alert(1)</script>', user: '<b>eve</b>', start: T0 - 20 * MIN, ms: 3000, n: 1 }));
add(finishedJob({ id: 'job_20261129097000_6bu5', name: 'gpu-train', backend: 'yarn', start: T0 - 10 * MIN, ms: 60000, n: 2, gpus: 2, every: 2000 }));
add(finishedJob({ id: 'job_20261129098000_b16f', name: 'wide-sweep', start: T0 - 5 * MIN, ms: 90000, n: 24, every: 1500 }));
add(liveJob('job_20261129099000_11fe'));
const users = ['ann', 'bob', 'chen', 'dara'];
const states = ['SUCCEEDED', 'SUCCEEDED', 'FAILED', 'KILLED', 'SUCCEEDED'];
for (let k = 0; k < 120; k++) {
  const id = `job_202611${String(1 + (k % 28)).padStart(2, '0')}0${String(100000 + k).slice(1)}_${(0x1000 + k).toString(16)}`;
  add(finishedJob({ id, name: `sweep-${k}`, user: users[k % 4], backend: k % 3 ? 'local' : 'yarn', state: states[k % 5], start: T0 - (60 + k * 37) * MIN, ms: 20000 + k * 1000, n: 1 + (k % 4), every: 5000, diagnostics: states[k % 5] === 'FAILED' ? 'worker:0 exited with code 2' : '' }));
}
}

function summary(j) {
  const v = j.view();
  return { job_id: v.job_id, name: v.name, user: v.user, backend: v.backend, state: v.state, submitted_ms: v.submitted_ms, finished_ms: v.finished_ms, tasks: v.tasks.length, diagnostics: v.diagnostics };
}

function config(j) {
  const v = j.view();
  return [
    { key: 'loom.application.framework', value: 'pytorch', source: 'tony.xml' },
    { key: 'loom.application.name', value: v.name, source: 'tony.xml' },
    { key: 'loom.secret.password', value: '<redacted>', source: '--conf' },
    { key: 'loom.task.metrics-interval-ms', value: '300', source: '--conf' },
    { key: 'loom.worker.command', value: 'python3 train_ddp.py "<script>alert(2)</script>"', source: '--executes' },
    { key: 'loom.worker.instances', value: String(v.tasks.length), source: 'tony.xml' },
    { key: 'loom.worker.memory', value: '2g', source: 'default' },
  ];
}

function logText(j, task, name) {
  const lines = [];
  const n = name === 'stdout' ? Math.floor((Date.now() - T0) / 500) + 40 : 12;
  for (let i = 0; i < n; i++) lines.push(`${name} ${task} line ${i}: epoch ${Math.floor(i / 10)} loss ${(1 / (i + 1)).toFixed(4)}${i === 3 ? ' <script>alert(2)</script> <img src=x onerror=alert(4)>' : ''}`);
  return lines.join('\n') + '\n';
}

function send(res, status, body) {
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-store' });
  res.end(JSON.stringify(body));
}

const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8', '.png': 'image/png', '.svg': 'image/svg+xml' };

const apiBase = arg('--api', '');

const server = createServer((req, res) => {
  const url = new URL(req.url, 'http://x');
  const p = url.pathname;
  if (apiBase && (p.startsWith('/api/') || p === '/metrics')) {
    fetch(new URL(req.url.slice(1), apiBase)).then(async (r) => {
      res.writeHead(r.status, { 'Content-Type': r.headers.get('content-type') || 'application/json' });
      res.end(Buffer.from(await r.arrayBuffer()));
    }, (e) => send(res, 502, { error: String(e) }));
    return;
  }
  const q = Object.fromEntries(url.searchParams);
  const parts = p.split('/').filter(Boolean).map(decodeURIComponent);
  if (parts[0] === 'api') {
    if (parts[1] === 'info') return send(res, 200, { server: amJob ? 'am' : 'portal', version: '0.1.0-fixture', ...(amJob ? { job_id: amJob } : {}) });
    if (parts[1] !== 'jobs') return send(res, 404, { error: `no such path: ${p}` });
    if (parts.length === 2) {
      let list = [...jobs.values()].map(summary);
      if (amJob) list = list.filter((s) => s.job_id === amJob);
      if (q.state) { const set = new Set(q.state.split(',')); list = list.filter((s) => set.has(s.state)); }
      if (q.user) list = list.filter((s) => s.user === q.user);
      if (q.backend) list = list.filter((s) => s.backend === q.backend);
      if (q.name) list = list.filter((s) => s.name.toLowerCase().includes(q.name.toLowerCase()));
      if (q.since) list = list.filter((s) => s.submitted_ms >= Number(q.since));
      if (q.until) list = list.filter((s) => s.submitted_ms <= Number(q.until));
      list.sort((a, b) => b.submitted_ms - a.submitted_ms);
      const offset = Number(q.offset || 0);
      const limit = Number(q.limit || 50);
      if (!(limit >= 1 && limit <= 500)) return send(res, 400, { error: 'limit: 1 to 500' });
      return send(res, 200, { total: list.length, offset, limit, jobs: list.slice(offset, offset + limit) });
    }
    const j = jobs.get(parts[2]);
    if (!j || (amJob && j.id !== amJob)) return send(res, 404, { error: `no job ${parts[2]}` });
    if (parts.length === 3) return send(res, 200, j.view());
    if (parts[3] === 'events') {
      const after = Number(q.after || 0);
      // Small chunks, as a long record comes from the real servers ("more": ask again).
      const ev = j.events.slice(after, after + 40);
      return send(res, 200, { events: ev, next: after + ev.length, more: after + ev.length < j.events.length });
    }
    if (parts[3] === 'metrics') {
      const after = q.after === undefined ? -Infinity : Number(q.after);
      return send(res, 200, { samples: j.samples.filter((s) => s.ms > after), truncated: false });
    }
    if (parts[3] === 'config') return send(res, 200, { entries: j.config ? j.config() : config(j) });
    if (j.logFiles && parts[3] === 'logs' && parts.length === 4) {
      return send(res, 200, { logs: j.logFiles().map(([task, name, f]) => ({ task, name, size: statSync(f).size })) });
    }
    if (j.logFiles && parts[3] === 'logs' && parts.length === 6) {
      const f = j.logFiles().find(([task, name]) => task === parts[4] && name === parts[5]);
      if (!f) return send(res, 404, { error: 'no such log' });
      const buf = readFileSync(f[2]);
      let offset = Number(q.offset || 0);
      if (offset < 0) offset = Math.max(0, buf.length + offset);
      const data = buf.subarray(offset, offset + Math.min(Number(q.limit || 65536), 1 << 20));
      return send(res, 200, { offset, size: buf.length, data: data.toString('utf8'), next: offset + data.length, eof: offset + data.length >= buf.length });
    }
    if (parts[3] === 'logs' && parts.length === 4) {
      const logs = [{ task: 'am', name: 'am.log', size: logText(j, 'am', 'am.log').length }];
      for (const t of j.view().tasks) for (const name of ['stdout', 'stderr', 'executor.log']) logs.push({ task: t.task, name, size: Buffer.byteLength(logText(j, t.task, name)) });
      return send(res, 200, { logs });
    }
    if (parts[3] === 'logs' && parts.length === 6) {
      const buf = Buffer.from(logText(j, parts[4], parts[5]));
      let offset = Number(q.offset || 0);
      if (offset < 0) offset = Math.max(0, buf.length + offset);
      const limit = Math.min(Number(q.limit || 65536), 1 << 20);
      const data = buf.subarray(offset, offset + limit);
      return send(res, 200, { offset, size: buf.length, data: data.toString('utf8'), next: offset + data.length, eof: offset + data.length >= buf.length });
    }
    return send(res, 404, { error: `no such path: ${p}` });
  }
  if (p === '/metrics') {
    res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4' });
    return res.end('# fixture\n');
  }
  const file = p === '/' ? 'index.html' : normalize(p).replace(/^\/+/, '');
  const full = join(dist, file);
  if (!full.startsWith(dist) || !existsSync(full) || !statSync(full).isFile()) return send(res, 404, { error: 'not found' });
  // The headers the real servers are asked to send with the page: a strict policy, so that a
  // test here fails where the page would need more.
  res.writeHead(200, {
    'Content-Type': TYPES[extname(full)] || 'application/octet-stream',
    'X-Content-Type-Options': 'nosniff',
    'Content-Security-Policy': "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'",
  });
  res.end(readFileSync(full));
});

if (amJob && jobs.get(amJob) && !jobs.get(amJob).finished) {
  setTimeout(() => process.exit(0), T0 + runSeconds * 1000 + 20 + lingerMs - Date.now());
}

server.listen(port, '127.0.0.1', () => {
  console.log(`Portal: http://127.0.0.1:${server.address().port}/`);
});
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => server.close(() => process.exit(0)));
