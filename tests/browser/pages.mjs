// Checks of the page's views that hold on the portal and on an AM's live dashboard alike, so
// that portal.test.mjs and dashboard.test.mjs share them. Each takes a playwright page already
// showing the view, asserts, and returns what it read.
import assert from 'node:assert/strict';
import { plotData, waitForPlot, maxOf } from './lib.mjs';

export const jobRow = (page, id) => page.locator(`table.jobs tr[data-job="${id}"]`);
export const taskRow = (page, task) => page.locator(`table.tasks tr[data-task="${task}"]`);

// The job list holds `id` in state `state`; returns the row's cells as text.
export async function expectListed(page, id, state) {
  const row = jobRow(page, id);
  await row.waitFor({ timeout: 15000 });
  if (state) assert.equal(await row.getAttribute('data-state'), state, `${id}'s state in the list`);
  return {
    name: await row.locator('a.job-link').textContent(),
    user: await row.locator('[data-col=user]').textContent(),
    backend: await row.locator('[data-col=backend]').textContent(),
    tasks: Number(await row.locator('[data-col=tasks]').textContent()),
  };
}

// The job page of `id` is shown (its header and task table); returns the tasks' rows, each
// {task, state, exit, rss, cpu, host}.
export async function readTaskTable(page, id) {
  await page.locator(`.job-page[data-job="${id}"]`).waitFor({ timeout: 15000 });
  await page.locator('table.tasks tbody tr').first().waitFor({ timeout: 15000 });
  return page.$$eval('table.tasks tbody tr', (rows) => rows.map((r) => {
    const cell = (c) => r.querySelector(`[data-col=${c}]`);
    return {
      task: r.dataset.task,
      state: r.dataset.state,
      exit: cell('exit').textContent.trim(),
      rss: Number(cell('rss').dataset.value || 0),
      cpu: cell('cpu').dataset.value === '' ? null : Number(cell('cpu').dataset.value),
      host: cell('host').textContent.trim(),
      last: Number(cell('last').dataset.value || 0),
    };
  }));
}

// The timeline's rows: {task, states: [state of each segment or end mark, in order]}.
export async function readTimeline(page) {
  await page.locator('.timeline .tl-row[data-task]').first().waitFor({ timeout: 15000 });
  return page.$$eval('.timeline .tl-row[data-task]', (rows) => rows.map((r) => ({
    task: r.dataset.task,
    states: [...r.querySelectorAll('[data-state]')].map((s) => s.dataset.state),
    restarts: r.querySelectorAll('.tl-restart').length,
  })));
}

// The CPU and RSS plots hold real samples of every task in `tasks`: some CPU above 0, every
// RSS series above 0. Returns both plots' data.
export async function expectResourcePlots(page, tasks) {
  const cpu = await waitForPlot(page, 'cpu', 'p.data[0].length > 1 && p.data.slice(1).some((s) => s.some((v) => v > 0))');
  const rss = await waitForPlot(page, 'rss', 'p.data[0].length > 1');
  for (const t of tasks) {
    assert.ok(cpu.series.includes(t), `the CPU plot has a series for ${t}: ${cpu.series}`);
    assert.ok(rss.series.includes(t), `the RSS plot has a series for ${t}: ${rss.series}`);
    const s = rss.data[1 + rss.series.indexOf(t)];
    assert.ok(s.some((v) => v > 0), `${t}'s RSS is above 0 somewhere`);
  }
  assert.ok(maxOf(cpu) > 0, 'some CPU above 0');
  // x: seconds since the epoch, increasing.
  const xs = cpu.data[0];
  for (let i = 1; i < xs.length; i++) assert.ok(xs[i] > xs[i - 1], 'x increases');
  assert.ok(xs[0] > 1.6e9 && xs[0] < 4e9, `x is seconds since the epoch: ${xs[0]}`);
  return { cpu, rss };
}

// Chooses `task`'s `name` log in the logs panel and waits until it holds `text`.
export async function expectLog(page, task, name, text) {
  await page.locator('select.log-select option').first().waitFor({ state: 'attached', timeout: 15000 });
  await page.selectOption('select.log-select', `${task}\n${name}`);
  await page.waitForFunction((t) => document.querySelector('.log-text').textContent.includes(t), text, { timeout: 15000 });
  return page.locator('.log-text').textContent();
}

// Filters the configuration table by `filter`; returns the rows left, {key: value}.
export async function filterConfig(page, filter) {
  await page.locator('table.config-table tbody tr').first().waitFor({ timeout: 15000 });
  await page.fill('input.config-filter', filter);
  await page.waitForTimeout(100);
  return Object.fromEntries(await page.$$eval('table.config-table tbody tr', (rows) => rows.map((r) => [r.dataset.key, r.children[1].textContent])));
}

export { plotData };
