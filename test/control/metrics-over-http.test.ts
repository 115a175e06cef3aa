// The control plane's metrics (docs/design.md §12) as a scraper sees them: the text passes `promtool
// check metrics`, this instance's counters move as heartbeats and receipts arrive, and the
// fleet gauges come from the store, so a second instance on the same store reports them alike.
import { afterEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createControlMetrics } from '../../src/control/metrics/control-metrics.js';
import { startRun } from '../../src/control/rollouts/start-run.js';
import { setTarget } from '../../src/control/targets/set-target.js';
import { openSqliteStore } from '../../src/control/store/sqlite/open-sqlite-store.js';
import type { ControlStore } from '../../src/control/store/store.js';
import { HEARTBEAT_PATH, MAX_BODY_BYTES } from '../../src/core/control-api.js';
import { enrollNodes, FakeNode, post, request, startControlInProcess, type Control } from '../helpers/control-harness.js';
import { assertPromtoolPasses, valueOf } from '../helpers/prom-text.js';

let c: Control | null = null;
afterEach(async () => {
  await c?.close();
  c = null;
});

async function scrape(ctl: Control): Promise<string> {
  const a = await request(ctl.metricsUrl!, '/metrics', 'GET');
  assert.equal(a.status, 200);
  assert.match(String(a.headers['content-type']), /^text\/plain; version=0\.0\.4/);
  return a.raw.toString('utf8');
}

const HB = 'steward_control_heartbeats_total';
const RC = 'steward_control_receipts_total';

test('the served metrics pass promtool check metrics, and the counters move as heartbeats and receipts arrive', async (t) => {
  c = await startControlInProcess({ metrics: {} });
  const before = await scrape(c);
  assertPromtoolPasses(t, before);
  assert.equal(valueOf(before, HB, { result: 'ok' }), 0, 'the ok series exists before the first heartbeat');
  assert.equal(valueOf(before, 'steward_control_heartbeat_duration_seconds_count'), 0);

  const [a, b] = (await enrollNodes(c, 2)) as [FakeNode, FakeNode];
  for (let i = 0; i < 3; i++) assert.equal((await a.heartbeat()).status, 200);
  assert.equal((await b.heartbeat()).status, 200);
  // Rejections, each counted under its code.
  assert.equal((await a.heartbeat({ seq: 1 })).status, 409);
  const stranger = new FakeNode(c, 'stranger');
  stranger.nodeId = 'n-not-enrolled';
  assert.equal((await stranger.heartbeat()).status, 401);
  assert.equal((await post(c.server.url, HEARTBEAT_PATH, Buffer.alloc(MAX_BODY_BYTES + 1, 0x20))).status, 400);
  // Receipts: with no reason, with a steward reason code, with a code of no steward's.
  const active = a.receipt({ attemptId: 'a-1', outcome: 'active' });
  const reverted = a.receipt({ attemptId: 'a-2', outcome: 'rolled-back', reason: { code: 'REPLACEMENT_UNHEALTHY', message: 'probe failed' } });
  const odd = a.receipt({ attemptId: 'a-3', outcome: 'refused', targetVersion: null, reason: { code: 'MADE_UP', message: 'x' } });
  assert.equal((await a.heartbeat({ receipts: [active, reverted, odd] })).status, 200);
  // Relayed again (the agent had not seen the answer): acknowledged, not stored, not counted again.
  assert.deepEqual((await a.heartbeat({ receipts: [active] })).body.ackedSeqs, [1]);

  const after = await scrape(c);
  assertPromtoolPasses(t, after);
  assert.equal(valueOf(after, HB, { result: 'ok' }), 6);
  assert.equal(valueOf(after, HB, { result: 'SEQ_REPLAYED' }), 1);
  assert.equal(valueOf(after, HB, { result: 'UNKNOWN_NODE' }), 1);
  assert.equal(valueOf(after, HB, { result: 'BAD_BODY' }), 1);
  // The body over the limit has no latency: it was never read whole.
  assert.equal(valueOf(after, 'steward_control_heartbeat_duration_seconds_count'), 8);
  assert.equal(valueOf(after, RC, { outcome: 'active', reason: 'none' }), 1);
  assert.equal(valueOf(after, RC, { outcome: 'rolled-back', reason: 'REPLACEMENT_UNHEALTHY' }), 1);
  assert.equal(valueOf(after, RC, { outcome: 'refused', reason: 'other' }), 1);
  assert.ok(valueOf(after, 'steward_control_store_commit_duration_seconds_count')! >= 8, 'enrollments and heartbeat batches are commits');
  assert.ok(valueOf(after, 'steward_control_store_sync_duration_seconds_count')! >= 1);
});

test('the fleet gauges come from the store: nodes by freshness and per app version, the same on a second instance', async (t) => {
  c = await startControlInProcess({ metrics: {}, heartbeatSeconds: 30 });
  const [a, b, d] = (await enrollNodes(c, 3)) as [FakeNode, FakeNode, FakeNode];
  a.setCurrent('api', '2.0.0');
  b.setCurrent('web', '1.1.0');
  assert.equal((await a.heartbeat()).status, 200);
  assert.equal((await b.heartbeat()).status, 200);
  let text = await scrape(c);
  const gauge = (name: string, labels: Record<string, string>) => valueOf(text, `steward_control_${name}`, labels);
  assert.deepEqual(['fresh', 'stale', 'never'].map((f) => gauge('nodes', { freshness: f })), [2, 0, 1]);
  assert.equal(gauge('app_version_nodes', { app: 'web', version: '1.0.0' }), 1);
  assert.equal(gauge('app_version_nodes', { app: 'web', version: '1.1.0' }), 1);
  assert.equal(gauge('app_version_nodes', { app: 'api', version: '2.0.0' }), 1);
  // Three intervals later, a's last heartbeat is stale; d's first makes it fresh.
  c.clock.advance(3 * 30_000 + 1);
  assert.equal((await d.heartbeat()).status, 200);
  text = await scrape(c);
  assert.deepEqual(['fresh', 'stale', 'never'].map((f) => gauge('nodes', { freshness: f })), [1, 2, 0]);
  assert.equal(gauge('app_version_nodes', { app: 'web', version: '1.0.0' }), 2);

  // A second instance on the same database, which saw none of these heartbeats.
  const other = openSqliteStore(c.dbFile, { clock: c.clock });
  try {
    const second = await createControlMetrics({ store: other, cacheMs: 0, processMetrics: false }).registry.metrics();
    assertPromtoolPasses(t, second);
    const fleet = (s: string) => s.split('\n').filter((l) => /^steward_control_(nodes|app_version_nodes|runs|run_nodes)\{/.test(l)).sort();
    assert.deepEqual(fleet(second), fleet(text));
    assert.equal(valueOf(second, HB, { result: 'ok' }), 0, "its own counters are its own: it answered no heartbeat");
  } finally {
    await other.close();
  }
});

test('runs by status and the nodes of a running run by state follow the rollout', async () => {
  c = await startControlInProcess({ metrics: {} });
  const nodes = await enrollNodes(c, 3);
  for (const n of nodes) assert.equal((await n.heartbeat()).status, 200);
  await c.addRelease('web', '1.1.0');
  const canary = (await c.store.read((tx) => tx.nodes.list()))[0]!.nodeId;
  await startRun(c.store as ControlStore, 'web', '1.1.0', { bakeMs: 0, canary: [canary], batch: '2' });
  await c.server.tick();
  let text = await scrape(c);
  assert.equal(valueOf(text, 'steward_control_runs', { status: 'running' }), 1);
  assert.equal(valueOf(text, 'steward_control_runs', { status: 'succeeded' }), 0);
  assert.equal(valueOf(text, 'steward_control_run_nodes', { app: 'web', state: 'issued' }), 1);
  assert.equal(valueOf(text, 'steward_control_run_nodes', { app: 'web', state: 'pending' }), 2);
  const first = nodes.find((n) => n.nodeId === canary)!;
  assert.equal((await first.answer('active')).length, 1);
  await c.server.tick();
  text = await scrape(c);
  assert.equal(valueOf(text, 'steward_control_run_nodes', { app: 'web', state: 'confirmed' }), 1);
  assert.equal(valueOf(text, 'steward_control_run_nodes', { app: 'web', state: 'issued' }), 2);
  for (const n of nodes) if (n !== first) await n.answer('active');
  await c.server.tick();
  text = await scrape(c);
  assert.equal(valueOf(text, 'steward_control_runs', { status: 'running' }), 0);
  assert.equal(valueOf(text, 'steward_control_runs', { status: 'succeeded' }), 1);
  assert.equal(valueOf(text, 'steward_control_run_nodes', { app: 'web', state: 'confirmed' }), undefined, 'an ended run has no run_nodes series');
});

test('scrapes within the cache period share one read of the store; the next period reads again', async () => {
  let reads = 0;
  let now = 0;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-metrics-cache-'));
  const real = openSqliteStore(path.join(dir, 'control.db'), { create: true });
  const counting: ControlStore = {
    location: 'counting',
    read: (fn) => {
      reads++;
      return real.read(fn);
    },
    write: (fn) => real.write(fn),
    durable: () => real.durable(),
    onRolloutWake: (l) => real.onRolloutWake(l),
    onNodeWake: (l) => real.onNodeWake(l),
    close: () => real.close(),
  };
  try {
    const { registry } = createControlMetrics({ store: counting, cacheMs: 5_000, now: () => now, processMetrics: false });
    await Promise.all(Array.from({ length: 20 }, () => registry.metrics()));
    assert.equal(reads, 1, 'twenty scrapes at once, one read');
    now += 4_999;
    await registry.metrics();
    assert.equal(reads, 1);
    now += 1;
    await registry.metrics();
    assert.equal(reads, 2);
  } finally {
    await real.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a store that fails leaves the fleet gauges out and counts the failure; the rest is still served', async (t) => {
  const failing: ControlStore = {
    location: 'failing',
    read: async () => {
      throw new Error('disk I/O error');
    },
    write: async () => {
      throw new Error('disk I/O error');
    },
    durable: async () => {},
    onRolloutWake: () => () => undefined,
    onNodeWake: () => () => undefined,
    close: async () => {},
  };
  const text = await createControlMetrics({ store: failing, cacheMs: 0, processMetrics: false }).registry.metrics();
  assertPromtoolPasses(t, text);
  assert.equal(valueOf(text, 'steward_control_fleet_read_errors_total'), 1);
  assert.equal(valueOf(text, 'steward_control_nodes', { freshness: 'fresh' }), undefined);
  assert.equal(valueOf(text, HB, { result: 'ok' }), 0);
});

test('each target has its nodes by state and those behind by their one reason, and the text passes promtool', async (t) => {
  c = await startControlInProcess({ metrics: {}, heartbeatSeconds: 30 });
  const nodes = await enrollNodes(c, 3);
  for (const n of nodes) assert.equal((await n.heartbeat()).status, 200);
  await c.addRelease('web', '1.1.0');
  await setTarget(c.store as ControlStore, { name: 'prod', app: 'web', version: '1.1.0', priority: 0, opts: { canaries: 0, batch: '1', bakeMs: 0 }, by: 'alice' }, async () => {});
  let text = await scrape(c);
  assertPromtoolPasses(t, text);
  assert.equal(valueOf(text, 'steward_control_target_nodes', { target: 'prod', state: 'behind' }), 3);
  assert.equal(valueOf(text, 'steward_control_target_nodes', { target: 'prod', state: 'current' }), 0);
  assert.equal(valueOf(text, 'steward_control_target_behind', { target: 'prod', reason: 'in-progress' }), 1);
  assert.equal(valueOf(text, 'steward_control_target_behind', { target: 'prod', reason: 'waiting-batch' }), 2);
  assert.equal(valueOf(text, 'steward_control_target_behind', { target: 'prod', reason: 'held' }), 0, 'every reason has its series');
  for (let i = 0; i < 4; i++) {
    for (const n of nodes) await n.answer('active');
    await c.server.tick();
  }
  text = await scrape(c);
  assert.equal(valueOf(text, 'steward_control_target_nodes', { target: 'prod', state: 'current' }), 3);
  assert.equal(valueOf(text, 'steward_control_target_behind', { target: 'prod', reason: 'waiting-batch' }), 0);
});
