// The store's hooks and their durable queue (docs/design.md §19), on both backends: a hook's name is
// the database's constraint (HOOK_EXISTS); an event is queued once per hook; a delivery is leased
// to one instance at a time, taken over once its lease runs out (a killed instance's), and only its
// holder records a failure; finished deliveries are counted and pruned; marks are kept per subject.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { openStore } from '../../src/control/store/open-store.js';
import type { ControlStore, HookRow } from '../../src/control/store/store.js';
import { FakeClock, T0 } from '../helpers/control-harness.js';
import { describeEachBackend } from '../helpers/store-backends.js';

const hook = (over: Partial<HookRow> = {}): HookRow => ({ name: 'ops', url: 'https://hooks.example/steward', events: ['run.halted', 'target.behind'], secret: 's'.repeat(32), createdAt: T0, createdBy: 'alice', ...over });

describeEachBackend((backend) => {
  let store: ControlStore;
  let db: string;
  const clock = new FakeClock();
  before(async () => {
    db = await backend.createDatabase();
    store = await openStore(db, { clock });
  });
  after(() => store.close());

  test('a hook is inserted, listed with its events and secret as stored, refused HOOK_EXISTS a second time, and removed with its deliveries', async () => {
    await store.write((tx) => tx.hooks.insert(hook()));
    assert.deepEqual(await store.read((tx) => tx.hooks.get('ops')), hook());
    await assert.rejects(store.write((tx) => tx.hooks.insert(hook({ url: 'https://other.example/' }))), (err: Error & { code?: string }) => err.code === 'HOOK_EXISTS' && /hook ops exists/.test(err.message));
    assert.equal((await store.read((tx) => tx.hooks.get('ops')))?.url, 'https://hooks.example/steward', 'the first one stays');
    await store.write((tx) => tx.hooks.insert(hook({ name: 'gone' })));
    await store.write((tx) => tx.hooks.enqueue({ hook: 'gone', eventId: 'e-gone', type: 'dev.steward.run.halted', body: '{}', at: T0 }));
    assert.equal(await store.write((tx) => tx.hooks.remove('gone')), true);
    assert.equal(await store.write((tx) => tx.hooks.remove('gone')), false);
    assert.deepEqual(await store.read((tx) => tx.hooks.deliveries('gone', 10)), []);
    assert.deepEqual((await store.read((tx) => tx.hooks.list())).map((h) => h.name), ['ops']);
  });

  test('an event is queued once per hook and id; a claim leases it to one owner until the lease runs out, then another takes it over', async () => {
    const at = clock.now();
    await store.write(async (tx) => {
      await tx.hooks.enqueue({ hook: 'ops', eventId: 'e1', type: 'dev.steward.run.halted', body: '{"id":"e1"}', at });
      await tx.hooks.enqueue({ hook: 'ops', eventId: 'e1', type: 'dev.steward.run.halted', body: '{"id":"other"}', at });
      await tx.hooks.enqueue({ hook: 'ops', eventId: 'e2', type: 'dev.steward.target.behind', body: '{"id":"e2"}', at });
    });
    assert.deepEqual(await store.read((tx) => tx.hooks.dueHooks(at)), ['ops']);
    assert.deepEqual(await store.read((tx) => tx.hooks.dueHooks(at - 1)), [], 'nothing due before it was queued');
    const a = await store.write((tx) => tx.hooks.claim('ops', 'instance-a', at, at + 30_000, 10));
    assert.deepEqual(await store.read((tx) => tx.hooks.dueHooks(at)), [], 'leased: not due');
    assert.deepEqual(a.map((d) => [d.eventId, d.body, d.leaseOwner, d.state, d.attempts]), [['e1', '{"id":"e1"}', 'instance-a', 'pending', 0], ['e2', '{"id":"e2"}', 'instance-a', 'pending', 0]]);
    assert.deepEqual(await store.write((tx) => tx.hooks.claim('ops', 'instance-b', at + 29_999, at + 60_000, 10)), [], 'leased: nobody else takes it');
    // instance-a is killed: its leases run out and b takes both over.
    const b = await store.write((tx) => tx.hooks.claim('ops', 'instance-b', at + 30_000, at + 60_000, 1));
    assert.deepEqual(b.map((d) => [d.eventId, d.leaseOwner]), [['e1', 'instance-b']], 'one at a time, oldest first');
    assert.equal(await store.write((tx) => tx.hooks.retry(b[0]!.id, 'instance-a', at + 30_001, at + 40_000, 'HOOK_DELIVERY_FAILED: late')), false, 'a former holder records nothing');
    assert.equal(await store.write((tx) => tx.hooks.retry(b[0]!.id, 'instance-b', at + 30_001, at + 40_000, 'HOOK_DELIVERY_FAILED: answered 500')), true);
    const [e1] = (await store.read((tx) => tx.hooks.deliveries('ops', 10))).filter((d) => d.eventId === 'e1');
    assert.deepEqual([e1?.attempts, e1?.nextAt, e1?.leaseOwner, e1?.lastError], [1, at + 40_000, null, 'HOOK_DELIVERY_FAILED: answered 500']);
    assert.deepEqual(await store.write((tx) => tx.hooks.claim('ops', 'instance-b', at + 39_999, at + 90_000, 10)).then((r) => r.map((d) => d.eventId)), ['e2'], 'e1 waits for its nextAt; e2 lease ran out');
    const again = await store.write((tx) => tx.hooks.claim('ops', 'instance-b', at + 40_000, at + 90_000, 10));
    assert.deepEqual(again.map((d) => [d.eventId, d.attempts]), [['e1', 1]], 'e1 is due again; e2 stays leased to b');
  });

  test('a delivery is recorded delivered or given up; the counts and the last failure are per hook; finished ones are pruned', async () => {
    const at = clock.now() + 100_000;
    const due = await store.write((tx) => tx.hooks.claim('ops', 'instance-c', at, at + 30_000, 10));
    assert.deepEqual(due.map((d) => d.eventId).sort(), ['e1', 'e2']);
    const e1 = due.find((d) => d.eventId === 'e1')!;
    const e2 = due.find((d) => d.eventId === 'e2')!;
    await store.write((tx) => tx.hooks.delivered(e1.id, at + 1));
    await store.write((tx) => tx.hooks.delivered(e1.id, at + 2));
    assert.equal(await store.write((tx) => tx.hooks.giveUp(e2.id, 'instance-c', at + 3, 'HOOK_DELIVERY_FAILED: no answer')), true);
    const rows = await store.read((tx) => tx.hooks.deliveries('ops', 10));
    assert.deepEqual(rows.map((d) => [d.eventId, d.state, d.attempts, d.finishedAt]).sort(), [['e1', 'delivered', 2, at + 1], ['e2', 'gave-up', 1, at + 3]]);
    assert.deepEqual(await store.read((tx) => tx.hooks.stats()), [{ hook: 'ops', pending: 0, delivered: 1, gaveUp: 1, lastAttemptAt: at + 3, lastError: 'HOOK_DELIVERY_FAILED: no answer' }]);
    assert.deepEqual(await store.write((tx) => tx.hooks.claim('ops', 'instance-c', at + 1e9, at + 2e9, 10)), [], 'nothing finished is taken again');
    assert.equal(await store.write((tx) => tx.hooks.prune(at + 2)), 1);
    assert.equal(await store.write((tx) => tx.hooks.prune(at + 4)), 1);
    assert.deepEqual(await store.read((tx) => tx.hooks.deliveries(null, 10)), []);
  });

  test('a mark is kept per subject and replaced', async () => {
    assert.equal(await store.read((tx) => tx.hooks.mark('target/prod')), null);
    await store.write((tx) => tx.hooks.setMark('target/prod', '1.2.0 converging', T0));
    await store.write((tx) => tx.hooks.setMark('target/prod', '1.2.0 converged', T0 + 1));
    assert.equal(await store.read((tx) => tx.hooks.mark('target/prod')), '1.2.0 converged');
  });

  // On PostgreSQL only: SQLite has one serving instance (docs/design.md §13), and its write
  // transaction excludes every other writer, so two stores of one process on one file would only
  // wait on each other's lock; there is no race to test there.
  if (backend.name !== 'sqlite') test('two stores on one database claiming at once never take the same delivery', async () => {
    const other = await openStore(db, { clock });
    try {
      const at = clock.now() + 10_000_000;
      await store.write(async (tx) => {
        for (let i = 0; i < 40; i++) await tx.hooks.enqueue({ hook: 'ops', eventId: `race-${i}`, type: 'dev.steward.run.halted', body: '{}', at });
      });
      const claims = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? other : store).write((tx) => tx.hooks.claim('ops', `owner-${i}`, at, at + 30_000, 4))));
      const ids = claims.flat().map((d) => d.eventId);
      assert.equal(ids.length, 40);
      assert.equal(new Set(ids).size, 40, 'each delivery leased once');
    } finally {
      await other.close();
    }
  });
});
