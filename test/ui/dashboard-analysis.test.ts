// The dashboard's run page shows the run's automated analysis (docs/design.md §19): the mode, each
// step's verdict with what it did, both cohorts' figures per signal, and a small chart of each signal per cohort over the window
// (inline SVG); a string from the store goes in as text, never as markup.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { StoredJudgement } from '../../src/control/store/judgement-record.js';
import { launchBrowser, logIn, openPage } from '../helpers/browser.js';
import { startDashboardFleet } from '../helpers/dashboard-fleet.js';

test("a run's page shows its analysis: each step's verdict and effect, each signal's cohorts and a chart of each over the window", async (t) => {
  const browser = await launchBrowser(t);
  if (!browser) return;
  const fleet = await startDashboardFleet();
  t.after(() => fleet.close());
  const store = fleet.control.store;
  const now = fleet.control.clock.now();
  const from = now - 10 * 60_000;
  const series = (canary: number, baseline: number) => ({ canary: Array.from({ length: 10 }, (_, i) => (i === 4 ? null : canary * (1 + (i % 3) / 10))), baseline: Array.from({ length: 10 }, () => baseline) });
  const judgement: StoredJudgement = {
    verdict: 'inconclusive', from: new Date(from).toISOString(), to: new Date(now).toISOString(),
    summary: 'inconclusive: error-ratio: canary no data (0 nodes, 0 req) vs baseline no data — too few requests <img src=x onerror=alert(1)>',
    signals: [
      { signal: 'restart-rate', verdict: 'pass', canary: { nodes: 1, value: 0.5, sample: 10 }, baseline: { nodes: 1, value: 0.4, sample: 10 }, why: 'no significant difference' },
      { signal: 'error-ratio', verdict: 'inconclusive', canary: { nodes: 0, value: null, sample: 0 }, baseline: { nodes: 0, value: null, sample: 0 }, why: 'too few requests <b>bold</b>' },
    ],
    series: { 'restart-rate': series(0.5, 0.4), 'liveness-failures': series(0, 0), 'error-ratio': { canary: Array(10).fill(null), baseline: Array(10).fill(null) } },
  };
  await store.write(async (tx) => {
    const id = await tx.runs.insert(
      { app: 'cache', version: '1.3.0', startedAt: from - 60_000, heartbeatIntervalMs: 30_000, selector: '', canaries: 0, namedCanaries: [], canarySeed: 1, batch: '1', bakeMs: 0, maxFailures: 0, maxRefused: '50%', maxFetchFailures: '20%',
        failuresCarried: 0, verdictTimeoutMs: 3_600_000, allowRetryReverted: false, windows: [], tz: 'UTC', startAt: null, behind: false, retryOf: null, analysis: { mode: 'enforce', windowMs: 10 * 60_000, thresholds: {} } },
      [],
    );
    await tx.runs.insertJudgement({ runId: id, step: 1, at: now, mode: 'enforce', verdict: 'inconclusive', from, to: now, judgement });
  });

  const op = await openPage(browser);
  await logIn(op, fleet.adminUrl, fleet.operatorToken);
  await op.page.goto(`${fleet.adminUrl}/ui/#rollout/cache`);
  const section = op.page.locator('main [data-section=analysis]');
  await section.waitFor();
  const text = await section.innerText();
  assert.match(text, /Analysis\s+enforce/);
  assert.match(text, /batch 1\s+inconclusive\s+paused/);
  assert.match(text, /canary 0\.50\/h \(1 nodes, 10 node-min\)/);
  assert.match(text, /baseline no data/);
  assert.match(text, /too few requests <b>bold<\/b>/, 'the why as text');
  assert.equal(await op.page.locator('main [data-section=analysis] b').count(), 0, 'no markup from the store');
  // One chart per signal that has a series: a canary line (broken at its minute without data) over the baseline's.
  const charts = op.page.locator('main svg.signal-chart');
  assert.deepEqual(await charts.evaluateAll((els) => els.map((e) => e.getAttribute('data-signal'))), ['restart-rate', 'error-ratio']);
  const restart = op.page.locator('main svg.signal-chart[data-signal=restart-rate]');
  assert.equal(await restart.locator('polyline.canary').count(), 2, 'a minute without data breaks the line');
  assert.equal(await restart.locator('polyline.baseline').count(), 1);
  assert.equal(await op.page.locator('main svg.signal-chart[data-signal=error-ratio] polyline').count(), 0, 'no data, no line');
  assert.equal(await op.page.locator('main img').count(), 0);
});
