// Several steward-control instances on one PostgreSQL database are one control plane (DESIGN
// §13): their transactions are SERIALIZABLE and one that lost a conflict with another instance
// runs again, so no write of either is lost and every uniqueness still holds. (SQLite's
// processes take the file's write lock in turn; two stores in one process would wait on each
// other, so this is PostgreSQL's own suite.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hashToken } from '../../src/control/enroll/tokens.js';
import { openStore } from '../../src/control/store/open-store.js';
import type { ControlStore } from '../../src/control/store/store.js';
import { T0 } from '../helpers/control-harness.js';
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
