// An AM's live dashboard in a real browser while its job runs: / opens the job's page, the task
// table and the plots change as samples come in (every 2 s), and the page shows the job's end.
// The same page checks as the portal's (pages.mjs).
//
// Env: LOOM_DASHBOARD_URL (the AM's dashboard root), LOOM_BROWSER_ARTEFACTS, LOOM_TEST_JOB (the
// AM's job id), LOOM_TEST_TASKS (its tasks, "worker:0,worker:1" by default),
// LOOM_TEST_END_TIMEOUT_S (how long to wait for the job's end; 180 by default).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { launch, shot, plotData } from './lib.mjs';
import { expectResourcePlots, readTaskTable, readTimeline } from './pages.mjs';

const JOB = process.env.LOOM_TEST_JOB || '';
const TASKS = (process.env.LOOM_TEST_TASKS || 'worker:0,worker:1').split(',');
const END_S = Number(process.env.LOOM_TEST_END_TIMEOUT_S || 180);
const TERMINAL = ['SUCCEEDED', 'FAILED', 'KILLED'];

describe('the live dashboard', () => {
  let b;
  let page;
  before(async () => {
    assert.ok(JOB, 'LOOM_TEST_JOB is not set');
    b = await launch();
  });
  after(async () => {
    if (b) await b.close();
  });

  test("/ opens the AM's own job", async () => {
    page = await b.open('');
    await page.waitForFunction((id) => location.hash === `#/jobs/${encodeURIComponent(id)}`, JOB, { timeout: 15000 });
    assert.equal(await page.locator('.app').getAttribute('data-server'), 'am');
    assert.equal(await page.locator('a.nav').count(), 0, 'no job list on an AM');
    assert.equal(await page.locator('a.nav-metrics').getAttribute('href'), 'metrics', 'Prometheus, relative');
    await readTaskTable(page, JOB);
  });

  test('the task table and the plots change while the job runs', async () => {
    assert.equal(await page.locator('.job-page').getAttribute('data-final'), 'false', 'the job is still running');
    await page.locator('.job-head .live').waitFor();
    await expectResourcePlots(page, TASKS);
    const before = await readTaskTable(page, JOB);
    const points = (await plotData(page, 'rss')).data[0].length;
    await shot(page, 'dashboard-live');
    // New samples reach the plot and the table without a reload (the page asks every 2 s).
    await page.waitForFunction((n) => window.__loomPlots.rss.data[0].length > n, points, { timeout: 20000, polling: 250 });
    const lastBefore = Math.max(...before.map((t) => t.last));
    await page.waitForFunction(
      (ms) => Math.max(...[...document.querySelectorAll('table.tasks [data-col=last]')].map((c) => Number(c.dataset.value || 0))) > ms,
      lastBefore, { timeout: 20000, polling: 250 });
    const now = await readTaskTable(page, JOB);
    assert.deepEqual(now.map((t) => t.task), TASKS);
    for (const t of now) assert.ok(t.state === 'RUNNING' || TERMINAL.includes(t.state), `${t.task}: ${t.state}`);
    const timeline = await readTimeline(page);
    assert.ok(timeline.every((r) => r.states.includes('RUNNING')), JSON.stringify(timeline));
  });

  test("the page shows the job's end", async () => {
    // The AM exits once its job ended; it must keep answering long enough for the page to see
    // the end (a few polls).
    await page.waitForFunction(() => document.querySelector('.job-page').dataset.final === 'true' || document.querySelector('.gone'),
      null, { timeout: END_S * 1000, polling: 500 });
    assert.equal(await page.locator('.gone').count(), 0, 'the AM stopped answering before the page saw the job end');
    const state = await page.locator('.job-head .state').getAttribute('data-state');
    assert.ok(TERMINAL.includes(state), state);
    assert.equal(await page.locator('.job-head .live').count(), 0, 'no longer live');
    const tasks = await readTaskTable(page, JOB);
    for (const t of tasks) assert.ok(TERMINAL.includes(t.state), `${t.task}: ${t.state}`);
    const timeline = await readTimeline(page);
    for (const r of timeline) assert.ok(TERMINAL.includes(r.states[r.states.length - 1]), JSON.stringify(r));
    await shot(page, 'dashboard-final');
  });

  test('no script error, no failed request, nothing asked of another server', () => {
    assert.deepEqual(b.dialogs, []);
    assert.deepEqual(b.problems, []);
  });
});
