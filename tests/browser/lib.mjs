// What every browser test shares: Debian's chromium through playwright-core (never a
// downloaded browser), a fresh profile, the server's URL, screenshots into the artefact dir,
// and a watch on the page for dialogs, script errors and failed requests.
import { chromium } from 'playwright-core';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const BASE = (process.env.LOOM_PORTAL_URL || process.env.LOOM_DASHBOARD_URL || '').replace(/\/?$/, '/');
export const ARTEFACTS = process.env.LOOM_BROWSER_ARTEFACTS || join(tmpdir(), 'loom-browser-artefacts');
export const CHROMIUM = process.env.LOOM_CHROMIUM || '/usr/bin/chromium';

// `options.elsewhere(url)`: a request off the server that is expected (YARN's proxy sends the
// page to the RM's own page of an application that has ended); such requests, and the console's
// errors about them, go to `elsewhere` ({url, from: the URL redirected from, or ""}) instead of
// `problems`. `requests`: the URL of every request the pages made, in order.
export async function launch(options = {}) {
  const expected = options.elsewhere || (() => false);
  if (BASE === '/') throw new Error('LOOM_PORTAL_URL (or LOOM_DASHBOARD_URL) is not set');
  mkdirSync(ARTEFACTS, { recursive: true });
  const profile = mkdtempSync(join(tmpdir(), 'loom-chromium-'));
  // A fresh profile (playwright passes it as --user-data-dir).
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
    viewport: { width: 1360, height: 900 },
    colorScheme: process.env.LOOM_BROWSER_THEME === 'dark' ? 'dark' : 'light',
  });
  const problems = [];
  const dialogs = [];
  const requests = [];
  const elsewhere = [];
  const open = async (hash = '#/') => {
    const page = await context.newPage();
    page.on('dialog', (d) => { dialogs.push(d.message()); d.dismiss().catch(() => {}); });
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('console', (m) => {
      if (m.type() !== 'error') return;
      // A "Failed to load resource" names the resource as its location.
      const where = m.location() && m.location().url;
      if (where && !where.startsWith(BASE) && expected(where)) return;
      problems.push(`console: ${m.text()}${where ? ` (${where})` : ''}`);
    });
    page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()} ${r.failure() && r.failure().errorText}`));
    // Every request must stay on the server (no CDN, nothing absolute elsewhere).
    page.on('request', (r) => {
      requests.push(r.url());
      if (r.url().startsWith(BASE) || r.url().startsWith('data:')) return;
      const from = r.redirectedFrom() ? r.redirectedFrom().url() : '';
      if (expected(r.url())) elsewhere.push({ url: r.url(), from });
      else problems.push(`request off the server: ${r.url()}${from ? ` (redirected from ${from})` : ''}`);
    });
    await page.goto(BASE + hash);
    return page;
  };
  const close = async () => {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  };
  return { context, open, close, problems, dialogs, requests, elsewhere };
}

export async function shot(page, name, options = {}) {
  const path = join(ARTEFACTS, `${name}.png`);
  await page.screenshot({ path, ...options });
  return path;
}

// The data a uPlot chart holds, as the page publishes it (window.__loomPlots[name]).
export async function plotData(page, name) {
  return page.evaluate((n) => {
    const p = (window.__loomPlots || {})[n];
    return p ? { series: p.series, data: p.data.map((a) => Array.from(a)), unit: p.unit } : null;
  }, name);
}

// Waits until the chart `name` holds data for which `pred` (a function body over `p`: {series,
// data}) is true, in the page.
export async function waitForPlot(page, name, pred, timeout = 20000) {
  await page.waitForFunction(
    ([n, body]) => {
      const p = (window.__loomPlots || {})[n];
      return !!p && new Function('p', `return (${body})`)(p);
    },
    [name, pred],
    { timeout, polling: 250 },
  );
  return plotData(page, name);
}

// The largest value of any series of a chart's data (nulls skipped).
export function maxOf(plot) {
  let m = -Infinity;
  for (const s of plot.data.slice(1)) for (const v of s) if (v !== null && v > m) m = v;
  return m;
}
