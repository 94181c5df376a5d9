// The page's derivations, without a browser: the timeline from events, the plots' series from
// samples, the formatting that the tables use.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { alignSeries, buildTimeline, compareTasks, latestSamples, pickCpu, pickGpuUtil, pickRss, taskFacts } from '../src/model.js';
import { bytes, cores, duration } from '../src/fmt.js';

const ev = (ts, event, f = {}) => ({ ts, event, ...f });

test('tasks sort by type, then by index as a number', () => {
  assert.deepEqual(['worker:10', 'ps:0', 'worker:2', 'am', 'worker:0'].sort(compareTasks), ['am', 'ps:0', 'worker:0', 'worker:2', 'worker:10']);
});

test('the timeline: one segment per state, the end a mark, restarts and gang restarts kept', () => {
  const job = { submitted_ms: 1000, finished_ms: 9000, final: true, tasks: [{ task: 'worker:0' }, { task: 'worker:1' }] };
  const events = [
    ev(1000, 'JOB_SUBMITTED'),
    ev(1100, 'TASK_STATE', { task: 'worker:0', state: 'PENDING' }),
    ev(1200, 'TASK_STATE', { task: 'worker:0', state: 'LAUNCHED', host: 'h1', container: 'c1' }),
    ev(1300, 'TASK_STATE', { task: 'worker:0', state: 'REGISTERED', address: 'h1:1' }),
    ev(1400, 'TASK_STATE', { task: 'worker:0', state: 'RUNNING' }),
    ev(1500, 'TASK_STATE', { task: 'worker:0', state: 'RUNNING', address: 'h1:2' }),
    ev(5000, 'TASK_STATE', { task: 'worker:0', state: 'FAILED', exit_code: 137 }),
    ev(5001, 'TASK_RESTARTING', { task: 'worker:0', exit_code: 137, restart: 1 }),
    ev(5002, 'TASK_STATE', { task: 'worker:0', state: 'LAUNCHED' }),
    ev(5500, 'TASK_STATE', { task: 'worker:0', state: 'RUNNING' }),
    ev(6000, 'JOB_RESTARTING', { attempt: 2, reason: 'x' }),
    ev(8900, 'TASK_STATE', { task: 'worker:0', state: 'SUCCEEDED', exit_code: 0 }),
    ev(9000, 'JOB_FINISHED', { state: 'SUCCEEDED' }),
  ];
  const t = buildTimeline(events, job);
  assert.equal(t.start, 1000);
  assert.equal(t.end, 9000);
  assert.deepEqual(t.rows.map((r) => r.task), ['worker:0', 'worker:1']);
  const w0 = t.rows[0];
  assert.deepEqual(w0.segments.map((s) => [s.state, s.from, s.to]), [
    ['PENDING', 1100, 1200], ['LAUNCHED', 1200, 1300], ['REGISTERED', 1300, 1400], ['RUNNING', 1400, 5000],
    ['FAILED', 5000, 5000], ['LAUNCHED', 5002, 5500], ['RUNNING', 5500, 8900], ['SUCCEEDED', 8900, 8900],
  ]);
  assert.deepEqual(w0.restarts, [{ ts: 5001, restart: 1, exit_code: 137 }]);
  assert.deepEqual(t.gang.map((g) => g.attempt), [2]);
  assert.deepEqual(t.rows[1].segments, []);
  assert.deepEqual(taskFacts(events)['worker:0'], { host: 'h1', container: 'c1', address: 'h1:2' });
});

test("a running job's open segments end now", () => {
  const job = { submitted_ms: 1000, final: false, tasks: [] };
  const t = buildTimeline([ev(1100, 'TASK_STATE', { task: 'worker:0', state: 'RUNNING' })], job, 5000);
  assert.equal(t.end, 5000);
  assert.deepEqual(t.rows[0].segments.map((s) => [s.state, s.to]), [['RUNNING', 5000]]);
});

test('series align on the union of times, in seconds, null where a task has no sample', () => {
  const samples = [
    { ms: 1000, task: 'worker:1', rss: 10 },
    { ms: 1000, task: 'worker:0', rss: 20 },
    { ms: 2000, task: 'worker:0', cpu: 0.5, rss: 30 },
    { ms: 2500, task: 'worker:1', cpu: 1.5, rss: 40, gpus: [{ i: 0, util: 80, mem: 5 }, { i: 1, util: 60, mem: 6 }] },
  ];
  assert.deepEqual(alignSeries(samples, pickRss), { labels: ['worker:0', 'worker:1'], data: [[1, 2, 2.5], [20, 30, null], [10, null, 40]] });
  assert.deepEqual(alignSeries(samples, pickCpu), { labels: ['worker:0', 'worker:1'], data: [[2, 2.5], [0.5, null], [null, 1.5]] });
  assert.deepEqual(alignSeries(samples, pickGpuUtil).labels, ['worker:1 gpu0', 'worker:1 gpu1']);
  assert.deepEqual(alignSeries(samples, pickRss, 1000).data[0], [0, 1, 1.5]);
  assert.deepEqual(latestSamples(samples)['worker:1'].ms, 2500);
});

test('past maxPoints times, buckets keep each series peak', () => {
  const samples = [];
  for (let i = 0; i < 1000; i++) samples.push({ ms: i * 10, task: 'worker:0', rss: i === 555 ? 1e9 : i });
  const a = alignSeries(samples, pickRss, 0, 100);
  assert.equal(a.data[0].length, 100);
  assert.equal(Math.max(...a.data[1]), 1e9);
});

test('formats', () => {
  assert.equal(bytes(0), '');
  assert.equal(bytes(1536), '1.5 KiB');
  assert.equal(bytes(300 * 1048576), '300 MiB');
  assert.equal(cores(0.5), '0.50');
  assert.equal(cores(12.34), '12.3');
  assert.equal(duration(9800), '9.8s');
  assert.equal(duration(31), '31ms');
  assert.equal(duration(61000), '1m01s');
  assert.equal(duration(3 * 3600000 + 5 * 60000), '3h05m');
});
