// tx.wakeNodes / onNodeWake (src/control/store/store.ts), the store's half of wake-ups: the
// nodeIds of a commit reach this process's listeners at once and, on PostgreSQL, every other
// instance's through NOTIFY (a large batch in several payloads); a rollback wakes nobody; a
// payload another client NOTIFYs on the channel yields only what is a nodeId.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openStore } from '../../src/control/store/open-store.js';
import { openSqliteStore } from '../../src/control/store/sqlite/open-sqlite-store.js';
import { waitUntil } from '../helpers/fleet.js';
import { pgQuery } from '../helpers/postgres.js';
import { describeEachBackend, describePostgres } from '../helpers/store-backends.js';

const ids = (n: number) => Array.from({ length: n }, (_, i) => `n-${i.toString(16).padStart(12, '0')}`);

describeEachBackend((backend) => {
  test('the nodeIds of a commit reach the listener once, deduplicated, after the commit; a rollback sends none', async () => {
    const store = await backend.open();
    try {
      const heard: string[][] = [];
      store.onNodeWake((n) => heard.push([...n]));
      await store.write(async (tx) => {
        await tx.wakeNodes(['n-0a', 'n-0b']);
        await tx.wakeNodes(['n-0b', 'n-0c']);
        await new Promise((r) => setImmediate(r));
        assert.equal(heard.length, 0, 'nothing before the commit');
      });
      await new Promise((r) => setImmediate(r));
      assert.deepEqual(heard.flat().sort(), ['n-0a', 'n-0b', 'n-0c']);
      await assert.rejects(store.write(async (tx) => {
        await tx.wakeNodes(['n-0d']);
        throw new Error('rolled back');
      }));
      await new Promise((r) => setImmediate(r));
      assert.ok(!heard.flat().includes('n-0d'));
    } finally {
      await store.close();
    }
  });
});

describePostgres((backend) => {
  test('a batch of 2,000 nodes committed on one instance reaches the other whole, in several NOTIFY payloads', async () => {
    const db = await backend.createDatabase();
    const [a, b] = [await openStore(db), await openStore(db)];
    try {
      const there = new Set<string>();
      let calls = 0;
      b.onNodeWake((n) => {
        calls++;
        for (const id of n) there.add(id);
      });
      // B's LISTEN connection opens with its first listener: wake until it hears one.
      await waitUntil('B to listen', 10_000, async () => (there.size > 0 ? true : (await a.write((tx) => tx.wakeNodes(['n-ff'])), undefined)));
      there.clear();
      calls = 0;
      const batch = ids(2_000);
      await a.write((tx) => tx.wakeNodes(batch));
      await waitUntil('the whole batch at B', 10_000, async () => (there.size === batch.length ? true : undefined));
      assert.ok(calls >= 4, `${calls} payloads`);
      assert.deepEqual([...there].sort(), batch);
    } finally {
      await a.close();
      await b.close();
    }
  });

  test('a payload another client NOTIFYs on the channel wakes only what is a nodeId in it', async () => {
    const db = await backend.createDatabase();
    const store = await openStore(db);
    try {
      const heard: string[] = [];
      store.onNodeWake((n) => heard.push(...n));
      await waitUntil('the listener to hear', 10_000, async () => {
        await pgQuery(db, `SELECT pg_notify('steward_nodes', $1)`, ['n-00aa,,n-XYZ,evil;DROP TABLE nodes,n-' + 'a'.repeat(65) + ',' + 'x'.repeat(100)]);
        return heard.length > 0 ? true : undefined;
      });
      assert.ok(heard.every((id) => id === 'n-00aa'), JSON.stringify(heard));
    } finally {
      await store.close();
    }
  });
});

// SQLite has one instance and no NOTIFY: a `steward-control --db FILE` command beside `serve` is
// another process's commit, which the serving store sees by PRAGMA data_version and answers by
// waking every enrolled node (it cannot know which ones the command changed). Its own commits
// never count as another's.
test("on SQLite, another process's commit wakes every enrolled node; the store's own commits do not", async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'steward-sqlite-wakes-'));
  const file = path.join(dir, 'control.db');
  const serving = openSqliteStore(file, { create: true, externalWakeMs: 50 });
  const cli = openSqliteStore(file);
  try {
    await serving.write(async (tx) => {
      for (const nodeId of ['n-000000000001', 'n-000000000002']) await tx.nodes.insert({ nodeId, hostname: nodeId, nodePublicKey: 'k', helperPublicKey: 'k', enrolledAt: 1, labels: {} });
    });
    const heard: string[][] = [];
    serving.onNodeWake((n) => heard.push([...n]));
    await serving.write((tx) => tx.settings.set('heartbeatSeconds', '30'));
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(heard, [], "the serving store's own commit is not another process's");
    await cli.write((tx) => tx.settings.set('heartbeatSeconds', '20'));
    await waitUntil('the other commit to be seen', 5_000, async () => (heard.length > 0 ? true : undefined));
    assert.deepEqual(heard, [['n-000000000001', 'n-000000000002']]);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(heard.length, 1, 'one commit, one wake');
  } finally {
    await cli.close();
    await serving.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
