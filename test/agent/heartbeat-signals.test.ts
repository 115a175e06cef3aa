// The agent's half of heartbeat v7 `signals` (docs/design.md §19): the helper's counts and the
// agent's scrapes become one `signals` per app, whole numbers within bounds; a control plane that
// did not list 7 gets none; scrapes happen once per interval and a failing one never throws.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appsForVersion, heartbeatApps } from '../../src/agent/heartbeat-apps.js';
import { AppScrapes } from '../../src/agent/metrics/app-scrapes.js';
import type { ScrapeOutcome } from '../../src/agent/metrics/scrape-metrics.js';
import { canonicalJson } from '../../src/core/canonical-json.js';
import { heartbeatAppSchema } from '../../src/core/heartbeat-schema.js';
import type { AppStatus } from '../../src/protocol/answers.js';

const METRICS = { url: 'http://127.0.0.1:9100/metrics', requests: 'req_total', errors: 'req_total{code=~"5.."}' };

function app(signals?: AppStatus['signals']): AppStatus {
  return {
    name: 'web', runner: 'process', current: '1.0.0', currentState: 'valid', previous: null, highestActive: '1.0.0', hold: null, blocked: null,
    quarantined: [], running: null, lastAttempt: null,
    supervisor: { expected: 'running', state: 'running', pid: 42, version: '1.0.0', attempts: 2, nextAttemptAt: null, lastExit: null, giveUpReason: null, since: 5 },
    ...(signals ? { signals } : {}),
  } as AppStatus;
}

const SINCE = Date.UTC(2026, 0, 2, 3, 4, 5, 678);
const counts = { since: SINCE, restarts: 2, livenessFailures: 1, watchdogKills: 0, oomKills: 1, cpuSeconds: 12.75, rssBytes: 5_000_000.5, metrics: METRICS };

test("the helper's counts and the agent's scrape make one signals, in whole numbers canonical JSON can sign", () => {
  const scraped = new Map([['web', { requests: 1030.9, errors: 25, scrape: { ok: true, at: '2026-01-02T03:10:00.000Z' } }]]);
  const { apps } = heartbeatApps([app(counts)], scraped);
  assert.deepEqual(apps[0]?.signals, {
    since: '2026-01-02T03:04:05.678Z', restarts: 2, livenessFailures: 1, watchdogKills: 0, oomKills: 1, cpuSeconds: 12, rssBytes: 5_000_000,
    requests: 1030, errors: 25, scrape: { ok: true, at: '2026-01-02T03:10:00.000Z' },
  });
  assert.doesNotThrow(() => canonicalJson(apps));
});

test('a failed scrape carries its code and no counters; a helper from before signals gives none; nonsense counts are clamped', () => {
  const failed = new Map([['web', { scrape: { ok: false, code: 'METRICS_TIMEOUT', at: '2026-01-02T03:10:00.000Z' } }]]);
  assert.deepEqual(heartbeatApps([app(counts)], failed).apps[0]?.signals?.scrape, { ok: false, code: 'METRICS_TIMEOUT', at: '2026-01-02T03:10:00.000Z' });
  assert.equal(heartbeatApps([app(counts)], failed).apps[0]?.signals?.requests, undefined);
  assert.equal(heartbeatApps([app()]).apps[0]?.signals, undefined);
  const odd = heartbeatApps([app({ ...counts, restarts: -4, livenessFailures: Infinity, cpuSeconds: NaN, rssBytes: 1e300 })]).apps[0]?.signals;
  assert.deepEqual([odd?.restarts, odd?.livenessFailures, odd?.cpuSeconds, odd?.rssBytes], [0, 0, 0, Number.MAX_SAFE_INTEGER]);
  assert.ok(heartbeatAppSchema.safeParse(heartbeatApps([app(counts)]).apps[0]).success);
  // A `since` that is no time: the app goes without signals, never out of the heartbeat.
  const noTime = heartbeatApps([app({ ...counts, since: -1 })]);
  assert.deepEqual([noTime.apps.length, noTime.apps[0]?.signals], [1, undefined]);
});

test('a control plane that did not list 7 gets no signals; one that did gets them', () => {
  const { apps } = heartbeatApps([app(counts)]);
  assert.equal(appsForVersion(apps, 6)[0]?.signals, undefined);
  assert.equal(appsForVersion(apps, 5)[0]?.signals, undefined);
  assert.ok(appsForVersion(apps, 7)[0]?.signals);
});

test('an app is scraped at most once per interval; a new metrics block or an elapsed interval scrapes again; a throwing scrape is an outcome', async () => {
  let now = 1_000_000;
  const asked: string[] = [];
  let answer: () => Promise<ScrapeOutcome> = async () => ({ ok: true, requests: 10, errors: 1 });
  const s = new AppScrapes({ now: () => now, scrape: async (spec) => (asked.push(spec.url), answer()) });
  const first = await s.collect([app(counts)], 30_000);
  assert.deepEqual(first.get('web'), { requests: 10, errors: 1, scrape: { ok: true, at: new Date(now).toISOString() } });
  now += 10_000;
  await s.collect([app(counts)], 30_000);
  assert.equal(asked.length, 1, 'a heartbeat woken early reuses the last scrape');
  await s.collect([app({ ...counts, metrics: { ...METRICS, url: 'http://127.0.0.1:9200/metrics' } })], 30_000);
  assert.equal(asked.length, 2, 'a new release with another metrics block is scraped at once');
  now += 30_000;
  answer = async () => {
    throw new Error('boom');
  };
  const thrown = await s.collect([app({ ...counts, metrics: { ...METRICS, url: 'http://127.0.0.1:9200/metrics' } })], 30_000);
  assert.deepEqual(thrown.get('web')?.scrape, { ok: false, code: 'METRICS_UNREACHABLE', at: new Date(now).toISOString() });
  assert.equal((await s.collect([app()], 30_000)).size, 0, 'an app without metrics is not scraped');
});
