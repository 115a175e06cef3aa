// The signal samples of docs/design.md §19 in the control plane's store, on both backends: one per
// node, app and minute (the first stays), read back by window, forgotten past the retention; the
// heartbeat's side (record-signals.ts) keeps a heartbeat every 30 s to one row a minute; and an
// older database gains the table when it is opened (SQLite) or migrated (PostgreSQL).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { judgeStep } from '../../src/control/analysis/judge-step.js';
import { defaultAnalysisPolicy } from '../../src/control/analysis/policy.js';
import { recordSignals, SIGNAL_RETENTION_MS } from '../../src/control/analysis/record-signals.js';
import { migrateStore, openStore } from '../../src/control/store/open-store.js';
import { MIGRATIONS, STORE_SCHEMA_VERSION } from '../../src/control/store/sqlite/schema.js';
import type { ControlStore, SignalSample } from '../../src/control/store/store.js';
import type { HeartbeatApp } from '../../src/core/heartbeat-schema.js';
import { StewardError } from '../../src/core/errors.js';
import { FakeClock, FakeNode, MINUTE, startControlOn, T0 } from '../helpers/control-harness.js';
import { pgQuery } from '../helpers/postgres.js';
import { describeEachBackend, describePostgres } from '../helpers/store-backends.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-signals-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const sample = (nodeId: string, at: number, over: Partial<SignalSample> = {}): SignalSample => ({
  nodeId, app: 'web', minute: at - (at % MINUTE), at, version: '1.0.0', since: T0 - 3_600_000, restarts: 1, livenessFailures: 0, watchdogKills: 0, oomKills: 0,
  cpuSeconds: 12.25, rssBytes: 52_428_800, requests: 1000, errors: 3, scrape: 'ok', ...over,
});

// An app report of a heartbeat v7 (the wire's `signals`, docs/protocol.md).
const app = (name: string, restarts: number, over: Record<string, unknown> = {}): HeartbeatApp =>
  ({
    name, current: '1.0.0', previous: null, held: false, blocked: false, supervisor: { state: 'running', attempts: 0, since: T0 },
    signals: { since: new Date(T0 - 3_600_000).toISOString(), restarts, livenessFailures: 0, watchdogKills: 0, oomKills: 0, cpuSeconds: 1, rssBytes: 1e6, ...over },
  }) as HeartbeatApp;

describeEachBackend((backend) => {
  let store: ControlStore;
  const clock = new FakeClock();
  before(async () => {
    store = await backend.open({ clock });
  });
  after(() => store.close());

  test('samples are stored one per node, app and minute, the first of a minute staying, and read back by window in node then time order', async () => {
    const m0 = T0 - (T0 % MINUTE);
    await store.write((tx) =>
      tx.signals.record([
        sample('n-b', m0 + 1000, { restarts: 2 }),
        sample('n-a', m0 + 1000),
        sample('n-a', m0 + 31_000, { restarts: 99 }),
        sample('n-a', m0 + MINUTE + 1000, { restarts: 3, requests: null, errors: null, scrape: 'SCRAPE_TIMEOUT', version: null, rssBytes: 5e9 }),
        sample('n-a', m0 + 1000, { app: 'api' }),
      ]),
    );
    const rows = await store.read((tx) => tx.signals.window('web', ['n-a', 'n-b', 'n-c'], m0, m0 + 2 * MINUTE));
    assert.deepEqual(rows, [
      sample('n-a', m0 + 1000),
      sample('n-a', m0 + MINUTE + 1000, { restarts: 3, requests: null, errors: null, scrape: 'SCRAPE_TIMEOUT', version: null, rssBytes: 5e9 }),
      sample('n-b', m0 + 1000, { restarts: 2 }),
    ]);
    // The window is [from, to), and only the nodes named.
    assert.deepEqual((await store.read((tx) => tx.signals.window('web', ['n-a'], m0 + 2000, m0 + MINUTE + 1000))), []);
    assert.deepEqual((await store.read((tx) => tx.signals.window('web', [], 0, Number.MAX_SAFE_INTEGER))), []);
    assert.equal((await store.read((tx) => tx.signals.window('api', ['n-a'], 0, Number.MAX_SAFE_INTEGER))).length, 1);
  });

  test('counters are kept as integers: a scraped float counter rounded, CPU to the millisecond', async () => {
    const at = T0 + 50 * MINUTE;
    await store.write((tx) => tx.signals.record([sample('n-f', at, { app: 'floats', requests: 2.6, errors: 0.4, cpuSeconds: 1.23456, rssBytes: 1e6 + 0.5 })]));
    const [row] = await store.read((tx) => tx.signals.window('floats', ['n-f'], at, at + 1));
    assert.deepEqual([row?.requests, row?.errors, row?.cpuSeconds, row?.rssBytes], [3, 0, 1.235, 1_000_001]);
  });

  test('a window over thousands of nodes is read in one query', async () => {
    const at = T0 + 10 * MINUTE;
    const ids = Array.from({ length: 5000 }, (_, i) => `n-many-${String(i).padStart(5, '0')}`);
    await store.write((tx) => tx.signals.record(ids.map((id) => sample(id, at, { app: 'many' }))));
    const rows = await store.read((tx) => tx.signals.window('many', ids, at, at + 1));
    assert.deepEqual(rows.map((r) => r.nodeId), ids);
  });

  test('prune forgets samples taken before its time, and says how many', async () => {
    const at = T0 + 100 * MINUTE;
    await store.write((tx) => tx.signals.record([sample('n-p', at, { app: 'prune' }), sample('n-p', at + MINUTE, { app: 'prune' }), sample('n-p', at + 2 * MINUTE, { app: 'prune' })]));
    const pruned = await store.write((tx) => tx.signals.prune(at + MINUTE));
    assert.ok(pruned >= 1, `pruned ${pruned}`);
    assert.deepEqual((await store.read((tx) => tx.signals.window('prune', ['n-p'], 0, Number.MAX_SAFE_INTEGER))).map((r) => r.at), [at + MINUTE, at + 2 * MINUTE]);
  });

  test('judgeStep reads both cohorts from the store: canaries erroring at 2 % against 0.1 % fail error-ratio; their minutes on the old version do not count', async () => {
    const from = T0 + 500 * MINUTE;
    const samples: SignalSample[] = [];
    for (let n = 0; n < 15; n++) {
      const canary = n < 5;
      const nodeId = `${canary ? 'n-can' : 'n-base'}-${n}`;
      for (let i = 0; i < 10; i++) {
        const requests = 1000 + i * (300 + n);
        const ratio = canary && i >= 2 ? 0.02 : 0.001;
        // A canary switched to 2.0.0 at minute 2: its first minutes, at 1.0.0, are not the new version's.
        samples.push(sample(nodeId, from + i * MINUTE + 5000, { app: 'judged', version: canary && i >= 2 ? '2.0.0' : '1.0.0', requests, errors: Math.floor(i * (300 + n) * ratio) + (canary && i >= 2 ? 100 : 0), restarts: 1 }));
      }
    }
    await store.write((tx) => tx.signals.record(samples));
    const ids = (prefix: string) => samples.filter((s) => s.nodeId.startsWith(prefix) && s.at === from + 5000).map((s) => s.nodeId);
    const input = { app: 'judged', canaryNodeIds: ids('n-can'), baselineNodeIds: ids('n-base'), from: new Date(from), to: new Date(from + 10 * MINUTE), policy: { ...defaultAnalysisPolicy('enforce'), windowMs: 10 * MINUTE } };
    const j = await judgeStep(store, { ...input, canaryVersion: '2.0.0', baselineVersion: '1.0.0' });
    assert.equal(j.verdict, 'fail', j.summary);
    assert.match(j.summary, /^fail: error-ratio: canary 1\.99 % \(5 nodes, [\d,]+ req\) vs baseline 0\.\d+ % \(10 nodes, [\d,]+ req\)/);
    assert.equal(j.signals.find((s) => s.signal === 'error-ratio')?.canary.sample, 5 * 7 * 300 + 7 * (0 + 1 + 2 + 3 + 4));
    // No baseline: inconclusive, with its why.
    const none = await judgeStep(store, { ...input, baselineNodeIds: [] });
    assert.equal(none.verdict, 'inconclusive');
    assert.match(none.signals[0]!.why, /the baseline has no nodes/);
  });

  test('v7 heartbeats through the server leave their signals in the store, one sample a minute, with the version the node ran', async () => {
    const control = await startControlOn(backend);
    try {
      const node = await new FakeNode(control).enroll();
      const signals = (restarts: number) => ({ since: new Date(T0 - 3_600_000).toISOString(), restarts, livenessFailures: 0, watchdogKills: 0, oomKills: 0, cpuSeconds: 3, rssBytes: 4096, requests: 100 * restarts, errors: restarts, scrape: { ok: true, at: new Date(T0).toISOString() } });
      const start = control.clock.now();
      for (let i = 0; i < 4; i++) {
        node.apps = [{ name: 'web', current: '1.0.0', signals: signals(i) } as never];
        const a = await node.heartbeat({ v: 7 });
        assert.equal(a.status, 200, JSON.stringify(a.body));
        control.clock.advance(30_000);
      }
      const rows = await control.store.read((tx) => tx.signals.window('web', [node.nodeId], 0, Number.MAX_SAFE_INTEGER));
      assert.deepEqual(rows.map((r) => [r.at - start, r.version, r.restarts, r.requests, r.errors, r.scrape]), [[0, '1.0.0', 0, 0, 0, 'ok'], [60_000, '1.0.0', 2, 200, 2, 'ok']]);
    } finally {
      await control.close();
    }
  });

  test('heartbeats every 30 s leave one sample a minute per app, and samples past the retention are forgotten', async () => {
    const start = T0 + 1000 * MINUTE;
    const nodeId = 'n-hb';
    for (let i = 0; i < 8; i++) {
      const at = start + i * 30_000;
      // The app `quiet` sends no signals (an agent before v7): nothing is stored for it.
      const apps = [app('hb', i), { ...app('quiet', 0), signals: undefined } as HeartbeatApp];
      await store.write((tx) => recordSignals(tx, store, { nodeId, apps }, at));
    }
    const rows = await store.read((tx) => tx.signals.window('hb', [nodeId], 0, Number.MAX_SAFE_INTEGER));
    assert.deepEqual(rows.map((r) => [r.at - start, r.restarts]), [[0, 0], [60_000, 2], [120_000, 4], [180_000, 6]]);
    assert.deepEqual(await store.read((tx) => tx.signals.window('quiet', [nodeId], 0, Number.MAX_SAFE_INTEGER)), []);
    // Signals that do not fit the shape are no data: nothing stored, the heartbeat goes on.
    const later = start + 10 * MINUTE;
    await store.write((tx) => recordSignals(tx, store, { nodeId, apps: [app('hb', -1), app('bad', 1, { since: 'yesterday' }), app('nan', 1, { cpuSeconds: 'a lot' })] }, later));
    assert.equal((await store.read((tx) => tx.signals.window('hb', [nodeId], later, later + 1))).length, 0);
    assert.equal((await store.read((tx) => tx.signals.window('bad', [nodeId], 0, Number.MAX_SAFE_INTEGER))).length, 0);
    // Past the retention, the next heartbeat's prune forgets them.
    const much = start + SIGNAL_RETENTION_MS + 5 * MINUTE;
    await store.write((tx) => recordSignals(tx, store, { nodeId, apps: [app('hb', 100)] }, much));
    assert.deepEqual((await store.read((tx) => tx.signals.window('hb', [nodeId], 0, Number.MAX_SAFE_INTEGER))).map((r) => r.at), [much]);
  });
});

test('a SQLite store of schema 9 (before signal samples) is upgraded when opened, and stores them', async () => {
  const file = path.join(dir, 'old.db');
  const raw = new Database(file);
  for (const m of MIGRATIONS.slice(0, 9)) m(raw);
  raw.pragma('user_version = 9');
  raw.close();
  const store = await openStore(file);
  try {
    await store.write((tx) => tx.signals.record([sample('n-old', T0)]));
    assert.deepEqual(await store.read((tx) => tx.signals.window('web', ['n-old'], T0, T0 + 1)), [sample('n-old', T0)]);
  } finally {
    await store.close();
  }
  const check = new Database(file, { readonly: true });
  assert.equal(check.pragma('user_version', { simple: true }), STORE_SCHEMA_VERSION);
  assert.ok(STORE_SCHEMA_VERSION >= 10);
  check.close();
});

describePostgres((backend) => {
  test('a PostgreSQL database of schema 9 is refused until `migrate` adds the signal samples, an expansion schema-9 instances go on using', async () => {
    const url = await backend.createDatabase();
    // And 11 (the runs' analysis and judgements) and 12 (hooks), after it.
    await pgQuery(url, 'DROP TABLE signal_samples, run_judgements, hook_marks, hook_deliveries, hooks, trust_metadata, trust_keys, trust_pending, trust_pending_keys');
    await pgQuery(url, 'ALTER TABLE nodes DROP COLUMN trust, DROP COLUMN "trustAt"');
    await pgQuery(url, 'ALTER TABLE runs DROP COLUMN analysis');
    await pgQuery(url, 'ALTER TABLE targets DROP COLUMN analysis');
    await pgQuery(url, 'ALTER TABLE releases DROP COLUMN "indexedManifest"');
    await pgQuery(url, 'DELETE FROM steward_migrations WHERE version >= 10');
    await assert.rejects(openStore(url), (err: unknown) => err instanceof StewardError && err.code === 'STATE_INVALID' && /schema version 9, older than/.test(err.message));
    assert.deepEqual((await migrateStore(url)).applied, [10, 11, 12, 13, 14, 15]);
    assert.deepEqual((await pgQuery(url, `SELECT "compatibleFrom" FROM steward_migrations WHERE version = 10`)).rows, [{ compatibleFrom: 9 }]);
    const store = await openStore(url);
    try {
      await store.write((tx) => tx.signals.record([sample('n-old', T0)]));
      assert.deepEqual(await store.read((tx) => tx.signals.window('web', ['n-old'], T0, T0 + 1)), [sample('n-old', T0)]);
    } finally {
      await store.close();
    }
  });
});
