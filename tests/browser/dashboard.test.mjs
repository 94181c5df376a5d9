// An AM's live dashboard in a real browser while its job runs: / opens the job's page, the task
// table and the plots change as samples come in (every 2 s), and the page shows the job's end.
// The same page checks as the portal's (pages.mjs).
//
// On YARN (LOOM_TEST_BACKEND=yarn) the page is opened at the application's tracking URL, the
// ResourceManager's web proxy (http://RM/proxy/APPLICATION_ID/), and every request it makes
// while the job runs must go through that path. The end differs: the AM unregisters with no
// final tracking URL, so from then on the proxy answers 302 to the RM's page of the application
// (/cluster/app/APPLICATION_ID), which the YARN test double does not serve (404). The page then
// either saw the final state in a poll before the unregistration, or says that the dashboard
// stopped answering; either is accepted, and only that redirect may leave the proxy path.
//
// Env: LOOM_DASHBOARD_URL (the AM's dashboard root, or the YARN proxy's URL of it),
// LOOM_BROWSER_ARTEFACTS, LOOM_TEST_JOB (the AM's job id), LOOM_TEST_TASKS (its tasks,
// "worker:0,worker:1" by default), LOOM_TEST_END_TIMEOUT_S (how long to wait for the job's end;
// 180 by default), LOOM_TEST_BACKEND ("local", the default, or "yarn"),
// LOOM_TEST_SCREENSHOT_PREFIX ("dashboard" by default).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { BASE, launch, shot, plotData } from './lib.mjs';
import { expectResourcePlots, readTaskTable, readTimeline } from './pages.mjs';

const JOB = process.env.LOOM_TEST_JOB || '';
const TASKS = (process.env.LOOM_TEST_TASKS || 'worker:0,worker:1').split(',');
const END_S = Number(process.env.LOOM_TEST_END_TIMEOUT_S || 180);
const YARN = process.env.LOOM_TEST_BACKEND === 'yarn';
const SHOTS = process.env.LOOM_TEST_SCREENSHOT_PREFIX || 'dashboard';
const TERMINAL = ['SUCCEEDED', 'FAILED', 'KILLED'];
// YARN: the application of the proxy path, and the RM's page of it.
const PROXIED = /^(https?:\/\/[^/]+)\/proxy\/(application_\d+_\d+)\/$/.exec(BASE);
const RM_APP_PAGE = PROXIED ? `${PROXIED[1]}/cluster/app/${PROXIED[2]}` : '';

describe('the live dashboard', () => {
  let b;
  let page;
  before(async () => {
    assert.ok(JOB, 'LOOM_TEST_JOB is not set');
    if (YARN) assert.ok(PROXIED, `LOOM_DASHBOARD_URL is not a YARN proxy URL: ${BASE}`);
    b = await launch(YARN ? { elsewhere: (url) => url === RM_APP_PAGE } : {});
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
    await shot(page, `${SHOTS}-live`);
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
    // What the page drew came from the server it was opened at (on YARN: the proxy path).
    const api = `${BASE}api/jobs/${encodeURIComponent(JOB)}`;
    for (const want of [BASE, `${BASE}assets/app.js`, api, `${api}/events`, `${api}/metrics`]) {
      assert.ok(b.requests.some((u) => u === want || u.startsWith(`${want}?`)), `no request for ${want}: ${b.requests}`);
    }
    const off = b.requests.filter((u) => !u.startsWith(BASE) && !u.startsWith('data:'));
    assert.deepEqual(off, [], `requests off ${BASE}`);
  });

  test("the page shows the job's end", { skip: YARN && 'on YARN: the test below' }, async () => {
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
    await shot(page, `${SHOTS}-final`);
  });

  test("on YARN, the page shows the job's end or that the proxy no longer reaches its AM", { skip: !YARN && 'YARN only' }, async (t) => {
    // The AM unregisters without a final tracking URL (and lingers for watchers only after
    // that), so the proxy sends the page to the RM's application page, which the double does
    // not serve: the page sees the end only if a poll fell between the job's end and the
    // unregistration. Either way it must settle, not hang.
    await page.waitForFunction(() => document.querySelector('.job-page').dataset.final === 'true' || document.querySelector('.gone'),
      null, { timeout: END_S * 1000, polling: 500 });
    await shot(page, `${SHOTS}-end`);
    const gone = (await page.locator('.gone').count()) > 0;
    t.diagnostic(gone ? 'the proxy sent the page to the RM\'s application page' : 'the page saw the final state');
    if (gone) {
      assert.match(await page.locator('.gone').textContent(), /This dashboard stopped answering \(.*HTTP 404\)/);
      assert.ok(b.elsewhere.length > 0, 'the page was sent to the RM\'s application page');
      for (const e of b.elsewhere) {
        assert.equal(e.url, RM_APP_PAGE);
        assert.ok(e.from.startsWith(BASE), `${e.url} reached through the proxy's redirect, from ${e.from}`);
      }
    } else {
      const state = await page.locator('.job-head .state').getAttribute('data-state');
      assert.ok(TERMINAL.includes(state), state);
      for (const task of await readTaskTable(page, JOB)) assert.ok(TERMINAL.includes(task.state), `${task.task}: ${task.state}`);
    }
  });

  test('no script error, no failed request, nothing asked of another server', () => {
    assert.deepEqual(b.dialogs, []);
    assert.deepEqual(b.problems, []);
  });
});
