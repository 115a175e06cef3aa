// On PostgreSQL the store's clock is the database's (docs/design.md §13: decisions use it, whichever
// instance makes them), fixed for a transaction, and its 64-bit integers are read as numbers:
// one beyond Number.MAX_SAFE_INTEGER is an error, never a silently rounded time or seq.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pgQuery } from '../helpers/postgres.js';
import { openStore } from '../../src/control/store/open-store.js';
import { describePostgres } from '../helpers/store-backends.js';

describePostgres((backend) => {
  test("without an injected clock, now() is the database's transaction time, the same throughout the transaction", async () => {
    const store = await openStore(await backend.createDatabase());
    try {
      const [first, later, dbNow] = await store.write(async (tx) => {
        const a = await tx.now();
        await tx.settings.set('k', 'v');
        await new Promise((r) => setTimeout(r, 20));
        return [a, await tx.now(), Date.now()];
      });
      assert.equal(later, first);
      assert.ok(Number.isSafeInteger(first) && first <= dbNow, `${first} is a time before the transaction ended (${dbNow})`);
      assert.ok((await store.read((tx) => tx.now())) > first, 'the next transaction has a later time');
    } finally {
      await store.close();
    }
  });

  test('a 64-bit integer beyond Number.MAX_SAFE_INTEGER is refused with STATE_INVALID, not rounded', async () => {
    const url = await backend.createDatabase();
    await pgQuery(url, `INSERT INTO nodes ("nodeId", hostname, "nodePublicKey", "helperPublicKey", "enrolledAt", "lastSeq") VALUES ('n-big', 'h', 'k', 'k', 0, 9007199254740993)`);
    const store = await openStore(url);
    try {
      await assert.rejects(store.read((tx) => tx.nodes.get('n-big')), (err: Error & { code?: string }) => err.code === 'STATE_INVALID' && /9007199254740993/.test(err.message));
      await store.write((tx) => tx.settings.set('after', 'ok'));
    } finally {
      await store.close();
    }
  });
});
