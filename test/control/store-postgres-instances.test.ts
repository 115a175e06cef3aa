// Several steward-control instances on one PostgreSQL database are one control plane (docs/design.md
// §13): their transactions are SERIALIZABLE and one that lost a conflict with another instance
// runs again, so no write of either is lost and every uniqueness still holds. (SQLite's
// processes take the file's write lock in turn; two stores in one process would wait on each
// other, so this is PostgreSQL's own suite.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hashToken } from '../../src/control/enroll/tokens.js';
import { openStore } from '../../src/control/store/open-store.js';
import type { ControlStore } from '../../src/control/store/store.js';
import { RUN_LOCK_CLASS } from '../../src/control/store/postgres/runs.js';
import { T0 } from '../helpers/control-harness.js';
import { waitUntil } from '../helpers/fleet.js';
import { pgQuery } from '../helpers/postgres.js';
import { describePostgres } from '../helpers/store-backends.js';

const pause = () => new Promise((r) => setImmediate(r));

describePostgres((backend) => {
  test('two instances on one database, each adding to one value in its own writes, lose no addition', async () => {
    const db = await backend.createDatabase();
    const [a, b] = [await openStore(db), await openStore(db)];
    try {
      const add = (s: ControlStore) => s.write(async (tx) => {
        const n = Number((await tx.settings.get('count')) ?? '0');
        await pause();
        await tx.settings.set('count', String(n + 1));
      });
      await Promise.all(Array.from({ length: 10 }, (_, i) => add(i % 2 ? a : b)));
      assert.equal(await a.read((tx) => tx.settings.get('count')), '10');
    } finally {
      await a.close();
      await b.close();
    }
  });

  test('a token is spent once even when two instances spend it at the same moment', async () => {
    const db = await backend.createDatabase();
    const [a, b] = [await openStore(db), await openStore(db)];
    try {
      await a.write((tx) => tx.tokens.insert(hashToken('st_x'), { id: 'tokx', createdAt: T0, expiresAt: Number.MAX_SAFE_INTEGER, labels: {} }));
      const spends = await Promise.all([a, b].map((s, i) => s.write((tx) => tx.tokens.spend(hashToken('st_x'), T0 + 1, `n-${i}`))));
      assert.equal(spends.filter((x) => x !== null).length, 1, JSON.stringify(spends));
    } finally {
      await a.close();
      await b.close();
    }
  });
});

describePostgres((backend) => {
  test("a run's advance lock is one transaction's at a time: another instance's tryLock answers false, and lock waits for the holder's end", async () => {
    const db = await backend.createDatabase();
    const [a, b] = [await openStore(db), await openStore(db)];
    try {
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      let locked!: () => void;
      const isLocked = new Promise<void>((r) => (locked = r));
      let aEnded = false;
      const holder = a.write(async (tx) => {
        assert.equal(await tx.runs.tryLock(7), true);
        locked();
        await held;
        // The COMMIT is sent after this: B cannot have the lock before.
        aEnded = true;
      });
      await isLocked;
      assert.equal(await b.write((tx) => tx.runs.tryLock(7)), false, 'held by A');
      assert.equal(await b.write((tx) => tx.runs.tryLock(8)), true, 'another run is free');
      const waiter = b.write(async (tx) => {
        await tx.runs.lock(7);
        return aEnded;
      });
      await waitUntil('B to wait for the lock', 10_000, async () => ((await pgQuery(db, `SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND classid = $1 AND objid = 7`, [RUN_LOCK_CLASS])).rowCount ? true : undefined));
      release();
      await holder;
      assert.equal(await waiter, true, "B's lock came after A's transaction ended");
    } finally {
      await a.close();
      await b.close();
    }
  });

  test("a commit that wakes the rollouts wakes this instance's listeners at once and the other instance's through NOTIFY", async () => {
    const db = await backend.createDatabase();
    const [a, b] = [await openStore(db), await openStore(db)];
    try {
      let here = 0;
      let there = 0;
      a.onRolloutWake(() => here++);
      b.onRolloutWake(() => there++);
      let wakes = 0;
      const wake = () => a.write(async (tx) => {
        wakes++;
        const before = here;
        await tx.wakeRollouts();
        assert.equal(here, before, 'nothing before the commit');
      });
      await wake();
      assert.equal(here, 1, 'the commit woke this instance at once');
      // B's LISTEN connection opens with its first listener: wake until it hears one.
      await waitUntil("B to hear A's wake", 10_000, async () => (there > 0 ? true : (await wake(), undefined)));
      assert.equal(here, wakes, 'each of its commits woke A once (its own NOTIFY is not passed on again)');
    } finally {
      await a.close();
      await b.close();
    }
  });
});
