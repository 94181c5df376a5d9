// The portal's pages in a real browser, over jobs that real `loom` runs made (run_portal_test.sh
// makes them and starts `loom portal`): the job list with a finished, a failed and a killed
// job; the DDP job's page (tasks, timeline, plots whose data holds the samples, logs,
// configuration); compare; and a job named <script>alert(1)</script> that stays text.
//
// Env: LOOM_PORTAL_URL (the portal's root), LOOM_BROWSER_ARTEFACTS (screenshots go there),
// LOOM_TEST_JOBS: JSON {"ddp": ID, "failed": ID, "killed": ID, "xss": ID} and optionally
// "ddp_log" (text the DDP job's worker:0 stdout holds; "test accuracy").
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { launch, shot } from './lib.mjs';
import { expectListed, expectLog, expectResourcePlots, filterConfig, jobRow, readTaskTable, readTimeline } from './pages.mjs';

const JOBS = JSON.parse(process.env.LOOM_TEST_JOBS || '{}');
const XSS = '<script>alert(1)</script>';

describe('loom portal', () => {
  let b;
  before(async () => {
    for (const k of ['ddp', 'failed', 'killed', 'xss']) assert.ok(JOBS[k], `LOOM_TEST_JOBS names no ${k} job`);
    b = await launch();
  });
  after(async () => {
    if (b) await b.close();
  });

  test('the job list shows the finished, the failed and the killed job, with counts and filters', async () => {
    const page = await b.open('#/');
    const ddp = await expectListed(page, JOBS.ddp, 'SUCCEEDED');
    assert.equal(ddp.tasks, 2);
    assert.equal(ddp.backend, 'local');
    await expectListed(page, JOBS.failed, 'FAILED');
    await expectListed(page, JOBS.killed, 'KILLED');
    await expectListed(page, JOBS.xss, 'SUCCEEDED');
    assert.equal(await page.locator('.app').getAttribute('data-server'), 'portal');
    // State counts under the chips.
    await page.waitForFunction(() => document.querySelector('.chip[data-state=FAILED] .chip-count').textContent !== '');
    const count = async (s) => Number(await page.locator(`.chip[data-state=${s}] .chip-count`).textContent());
    assert.ok((await count('SUCCEEDED')) >= 2);
    assert.ok((await count('FAILED')) >= 1);
    assert.ok((await count('KILLED')) >= 1);
    // For the README: the list down to its pager.
    const listEnd = await page.evaluate(() => Math.ceil(document.querySelector('.pager').getBoundingClientRect().bottom + window.scrollY + 20));
    await shot(page, 'portal-jobs', { fullPage: true, clip: { x: 0, y: 0, width: 1360, height: Math.max(360, Math.min(listEnd, 1400)) } });
    // Filter by state: only failed jobs.
    await page.click('.chip[data-state=FAILED]');
    await page.waitForFunction(() => location.hash.includes('state=FAILED'));
    await jobRow(page, JOBS.failed).waitFor();
    await page.waitForFunction(() => [...document.querySelectorAll('table.jobs tbody tr')].every((r) => r.dataset.state === 'FAILED'));
    assert.equal(await jobRow(page, JOBS.ddp).count(), 0);
    // By name (a substring, any case).
    await page.goto(`${page.url().split('#')[0]}#/?name=DIGITS`);
    await jobRow(page, JOBS.ddp).waitFor();
    await page.waitForFunction(() => document.querySelectorAll('table.jobs tbody tr').length === 1);
    await page.close();
  });

  test("the DDP job's page shows its tasks, timeline and plots of real samples", async () => {
    const page = await b.open(`#/jobs/${encodeURIComponent(JOBS.ddp)}`);
    const tasks = await readTaskTable(page, JOBS.ddp);
    assert.deepEqual(tasks.map((t) => t.task), ['worker:0', 'worker:1']);
    for (const t of tasks) {
      assert.equal(t.state, 'SUCCEEDED');
      assert.equal(t.exit, '0');
      assert.ok(t.rss > 0, `${t.task}'s peak RSS in the table`);
      assert.notEqual(t.host, '', `${t.task}'s address`);
    }
    assert.equal(await page.locator('.job-head .state').getAttribute('data-state'), 'SUCCEEDED');
    const timeline = await readTimeline(page);
    assert.deepEqual(timeline.map((r) => r.task), ['worker:0', 'worker:1']);
    for (const r of timeline) {
      assert.ok(r.states.includes('RUNNING'), `${r.task} ran: ${r.states}`);
      assert.equal(r.states[r.states.length - 1], 'SUCCEEDED', `${r.task} ends SUCCEEDED: ${r.states}`);
      assert.ok(r.states.indexOf('PENDING') < r.states.indexOf('RUNNING'));
    }
    const { cpu, rss } = await expectResourcePlots(page, ['worker:0', 'worker:1']);
    assert.ok(cpu.data[0].length >= 3, `several samples: ${cpu.data[0].length}`);
    // The plot holds what the API says, to the byte.
    const api = await page.evaluate(async (id) => (await (await fetch(`api/jobs/${encodeURIComponent(id)}/metrics`)).json()).samples, JOBS.ddp);
    const mine = api.filter((s) => s.task === 'worker:0');
    const series = rss.data[1 + rss.series.indexOf('worker:0')];
    assert.deepEqual(series.filter((v) => v !== null), mine.map((s) => s.rss));
    await page.locator('.plot[data-plot=cpu] canvas').waitFor();
    const log = await expectLog(page, 'worker:0', 'stdout', JOBS.ddp_log || 'test accuracy');
    assert.ok(log.length > 0);
    const conf = await filterConfig(page, 'metrics-interval');
    assert.ok(Object.values(conf).includes('300'), `loom.task.metrics-interval-ms in the configuration: ${JSON.stringify(conf)}`);
    await page.fill('input.config-filter', '');
    await page.evaluate(() => window.scrollTo(0, 0));
    // For the README: the header, tasks, timeline and plots.
    const plotsEnd = await page.evaluate(() => {
      const r = document.querySelector('.plots').getBoundingClientRect();
      return Math.ceil(r.bottom + window.scrollY + 24);
    });
    await shot(page, 'job-page', { fullPage: true, clip: { x: 0, y: 0, width: 1360, height: Math.min(plotsEnd, 1400) } });
    await shot(page, 'job-page-full', { fullPage: true });
    await page.close();
  });

  test("the failed and the killed job's pages say why", async () => {
    let page = await b.open(`#/jobs/${encodeURIComponent(JOBS.failed)}`);
    let tasks = await readTaskTable(page, JOBS.failed);
    assert.equal(await page.locator('.job-head .state').getAttribute('data-state'), 'FAILED');
    assert.ok(tasks.some((t) => t.state === 'FAILED' && t.exit === '1'), JSON.stringify(tasks));
    assert.notEqual((await page.locator('.diagnostics').textContent()).trim(), '');
    await shot(page, 'failed-job');
    await page.close();

    page = await b.open(`#/jobs/${encodeURIComponent(JOBS.killed)}`);
    tasks = await readTaskTable(page, JOBS.killed);
    assert.equal(await page.locator('.job-head .state').getAttribute('data-state'), 'KILLED');
    assert.match(await page.locator('.diagnostics').textContent(), /kill/);
    const timeline = await readTimeline(page);
    assert.ok(timeline.every((r) => r.states.includes('RUNNING')), JSON.stringify(timeline));
    await shot(page, 'killed-job');
    await page.close();
  });

  test('two jobs compare: their CPU and RSS overlaid', async () => {
    const page = await b.open(`#/compare/${encodeURIComponent(JOBS.ddp)}/${encodeURIComponent(JOBS.killed)}`);
    await page.waitForFunction(() => window.__loomPlots && window.__loomPlots['compare-rss']);
    const series = await page.evaluate(() => window.__loomPlots['compare-rss'].series);
    assert.ok(series.includes('A worker:0') && series.includes('B worker:0'), series.join(', '));
    await shot(page, 'compare');
    await page.close();
  });

  test('a job named <script>alert(1)</script> shows as text, and no dialog fires', async () => {
    const page = await b.open('#/');
    await expectListed(page, JOBS.xss);
    assert.equal((await jobRow(page, JOBS.xss).locator('a.job-link').textContent()).trim(), XSS);
    assert.equal(await page.locator('script').count(), 1, 'the page holds its own script only');
    await page.goto(`${page.url().split('#')[0]}#/jobs/${encodeURIComponent(JOBS.xss)}`);
    await page.locator(`.job-page[data-job="${JOBS.xss}"]`).waitFor();
    assert.equal((await page.locator('.job-name').textContent()).trim(), XSS);
    await expectLog(page, 'worker:0', 'stdout', '<script>alert(2)</script>');
    const conf = await filterConfig(page, 'application.name');
    assert.ok(Object.values(conf).includes(XSS), JSON.stringify(conf));
    assert.equal(await page.locator('script').count(), 1);
    assert.equal(await page.locator('img').count(), 0);
    await page.waitForTimeout(500);
    assert.deepEqual(b.dialogs, [], 'no dialog');
    await shot(page, 'xss-job');
    await page.close();
  });

  test('no script error, no failed request, nothing asked of another server', () => {
    assert.deepEqual(b.problems, []);
    assert.deepEqual(b.dialogs, []);
  });
});
