// The fleet's TUF repository in the control plane's store (docs/design.md §21.2), on both backends:
// metadata append-only by role and version (the first insert wins, the second is dropped), the
// online keys made once, one pending root and one pending targets, each node's trust report from
// its heartbeat; older schemas are upgraded.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { StewardError } from '../../src/core/errors.js';
import { migrateStore, openStore } from '../../src/control/store/open-store.js';
import { MIGRATIONS, STORE_SCHEMA_VERSION } from '../../src/control/store/sqlite/schema.js';
import type { ControlStore } from '../../src/control/store/store.js';
import { generateKeyPair } from '../../src/platform/keys.js';
import { FakeClock, T0 } from '../helpers/control-harness.js';
import { describeEachBackend, describePostgres } from '../helpers/store-backends.js';
import { pgQuery } from '../helpers/postgres.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-store-trust-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describeEachBackend((backend) => {
  let store: ControlStore;
  const clock = new FakeClock();

  test('metadata is kept byte for byte, one row per role and version: a second insert of a version is dropped', async () => {
    store = await backend.open({ clock });
    try {
      const row = (role: string, version: number, bytes: string) => ({ role, version, bytes, createdAt: T0 + version });
      assert.equal(await store.write((tx) => tx.trust.publish(row('timestamp', 1, '{"a": 1}'))), true);
      assert.equal(await store.write((tx) => tx.trust.publish(row('timestamp', 1, '{"b":2}'))), false);
      await store.write(async (tx) => {
        assert.equal(await tx.trust.publish(row('timestamp', 2, '{"t":2}')), true);
        assert.equal(await tx.trust.publish(row('timestamp', 2, '{"t":3}')), false, 'inside a transaction too, and it goes on');
        assert.equal(await tx.trust.publish(row('app.web', 1, 'w1')), true);
        assert.equal(await tx.trust.publish(row('app.web', 2, 'w2')), true);
        assert.equal(await tx.trust.publish(row('app.api', 1, 'a1')), true);
        assert.equal(await tx.trust.publish(row('root', 1, 'r1')), true);
      });
      await store.read(async (tx) => {
        assert.deepEqual(await tx.trust.get('timestamp', 1), row('timestamp', 1, '{"a": 1}'));
        assert.equal((await tx.trust.latest('timestamp'))?.bytes, '{"t":2}');
        assert.equal(await tx.trust.latest('snapshot'), null);
        assert.deepEqual((await tx.trust.after('timestamp', 0)).map((r) => r.version), [1, 2]);
        assert.deepEqual((await tx.trust.latestOf('app.')).map((r) => [r.role, r.version]), [['app.api', 1], ['app.web', 2]]);
      });
    } finally {
      await store.close();
    }
  });

  test('the online keys are made once; one pending root and one pending targets; a node keeps its latest trust report', async () => {
    store = await backend.open({ clock });
    try {
      const k = generateKeyPair();
      const keys = (['director', 'snapshot', 'timestamp'] as const).map((role) => ({ role, privateKey: k.privatePem, publicKey: k.publicPem, createdAt: T0 }));
      assert.equal(await store.write((tx) => tx.trust.insertKeys(keys)), true);
      assert.equal(await store.write((tx) => tx.trust.insertKeys(keys)), false);
      assert.deepEqual(await store.read((tx) => tx.trust.keys()), keys);

      await store.write((tx) => tx.trust.setPending({ role: 'root', bytes: 'r2', updatedAt: T0, updatedBy: 'alice' }));
      await store.write((tx) => tx.trust.setPending({ role: 'root', bytes: 'r2+sig', updatedAt: T0 + 1, updatedBy: 'bob' }));
      assert.deepEqual(await store.read((tx) => tx.trust.pending('root')), { role: 'root', bytes: 'r2+sig', updatedAt: T0 + 1, updatedBy: 'bob' });
      assert.equal(await store.read((tx) => tx.trust.pending('targets')), null);
      await store.write((tx) => tx.trust.clearPending('root'));
      assert.equal(await store.read((tx) => tx.trust.pending('root')), null);

      await store.write((tx) => tx.nodes.insert({ nodeId: 'n-a', hostname: 'a', nodePublicKey: k.publicPem, helperPublicKey: k.publicPem, enrolledAt: T0, labels: {} }));
      const hb = { v: 8 as const, nodeId: 'n-a', sentAt: T0, bootId: 'b', agentVersion: '0.1.0', apps: [], receipts: [] };
      assert.equal((await store.read((tx) => tx.nodes.get('n-a')))?.trust, null);
      const report = { scheme: 'tuf' as const, rootVersion: 2, timestampVersion: 7, timestampAgeSeconds: 30 };
      await store.write((tx) => tx.nodes.recordHeartbeat({ ...hb, seq: 1, trust: report }, T0 + 5));
      assert.deepEqual((await store.read((tx) => tx.nodes.get('n-a')))?.trust, { ...report, at: T0 + 5 });
      assert.deepEqual((await store.read((tx) => tx.nodes.list()))[0]?.trust, { ...report, at: T0 + 5 });
      assert.equal(await store.read((tx) => tx.nodes.countMetadataStale(7200)), 0);
      assert.equal(await store.read((tx) => tx.nodes.countMetadataStale(29)), 1);
      await store.write((tx) => tx.nodes.recordHeartbeat({ ...hb, seq: 3, trust: { scheme: 'tuf' } }, T0 + 5));
      assert.equal(await store.read((tx) => tx.nodes.countMetadataStale(7200)), 1, 'no timestamp at all');
      await store.write((tx) => tx.nodes.recordHeartbeat({ ...hb, seq: 4, trust: { scheme: 'keys' } }, T0 + 5));
      assert.equal(await store.read((tx) => tx.nodes.countMetadataStale(7200)), 0);
      await store.write((tx) => tx.nodes.recordHeartbeat({ ...hb, v: 7 as const, seq: 5 }, T0 + 6));
      assert.equal((await store.read((tx) => tx.nodes.get('n-a')))?.trust, null, 'a heartbeat without a report leaves none');
    } finally {
      await store.close();
    }
  });
});

test('a SQLite store of schema 13 is upgraded when opened: its nodes have no trust report, its repository is empty', async () => {
  const file = path.join(dir, 'old.db');
  const raw = new Database(file);
  for (const m of MIGRATIONS.slice(0, 13)) m(raw);
  raw.pragma('user_version = 13');
  raw.prepare(`INSERT INTO nodes (nodeId, hostname, nodePublicKey, helperPublicKey, enrolledAt) VALUES ('n-old', 'old', 'x', 'x', 1)`).run();
  raw.close();
  const store = await openStore(file);
  try {
    assert.equal((await store.read((tx) => tx.nodes.get('n-old')))?.trust, null);
    assert.equal(await store.read((tx) => tx.trust.latest('root')), null);
  } finally {
    await store.close();
  }
  const check = new Database(file, { readonly: true });
  assert.equal(check.pragma('user_version', { simple: true }), STORE_SCHEMA_VERSION);
  assert.ok(STORE_SCHEMA_VERSION >= 14);
  check.close();
});

describePostgres((backend) => {
  test('a PostgreSQL database of schema 13 is refused until `migrate` adds the repository, an expansion schema-13 instances go on using', async () => {
    const url = await backend.createDatabase();
    await pgQuery(url, 'DROP TABLE trust_metadata, trust_keys, trust_pending, trust_pending_keys');
    await pgQuery(url, 'ALTER TABLE nodes DROP COLUMN trust, DROP COLUMN "trustAt"');
    await pgQuery(url, 'DELETE FROM steward_migrations WHERE version >= 14');
    await assert.rejects(openStore(url), (err: unknown) => err instanceof StewardError && err.code === 'STATE_INVALID' && /schema version 13, older than/.test(err.message));
    assert.deepEqual((await migrateStore(url)).applied, [14, 15]);
    assert.deepEqual((await pgQuery(url, `SELECT "compatibleFrom" FROM steward_migrations WHERE version = 14`)).rows, [{ compatibleFrom: 13 }]);
    const store = await openStore(url);
    try {
      assert.equal(await store.read((tx) => tx.trust.latest('root')), null);
    } finally {
      await store.close();
    }
  });
});
