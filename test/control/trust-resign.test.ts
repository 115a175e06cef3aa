// Re-signing the fleet's timestamp (docs/design.md §21.2, §21.4), on both backends, with a fake clock:
// nothing before an hour; the next version once the newest is an hour old, naming the same
// snapshot; two instances on one database at once make one version, the other's is dropped
// quietly; a server re-signs on its own timer; a snapshot half through its week is made anew.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { MetadataKind } from '@tufjs/models';
import { TIMESTAMP_RESIGN_MS } from '../../src/core/trust/roles.js';
import { openStore } from '../../src/control/store/open-store.js';
import type { ControlStore } from '../../src/control/store/store.js';
import { parseMetadata, resignIfDue } from '../../src/control/trust/repository.js';
import { FakeClock, startControlOn, type Control } from '../helpers/control-harness.js';
import { describeEachBackend } from '../helpers/store-backends.js';
import { filesOf, seedRepository, updaterOver, bytesOf } from '../helpers/trust-admin.js';
import { trustBundle } from '../../src/control/trust/bundle-route.js';

const MINUTE = 60_000;

describeEachBackend((backend) => {
  const stores: ControlStore[] = [];
  after(async () => {
    for (const s of stores) await s.close();
  });

  test('two instances on one database: one new timestamp an hour after the last, naming the same snapshot; the other is dropped quietly', async () => {
    const clock = new FakeClock(Date.now());
    const db = await backend.createDatabase();
    const a = await openStore(db, { clock });
    const b = await openStore(db, { clock });
    stores.push(a, b);
    const seeded = await seedRepository(a, clock.now());
    const latest = () => a.read((tx) => tx.trust.latest('timestamp'));
    const first = await latest();
    assert.equal(first?.version, 2, 'one timestamp for the targets, one for the app');
    clock.advance(TIMESTAMP_RESIGN_MS - MINUTE);
    assert.deepEqual([await a.write(resignIfDue), await b.write(resignIfDue)], [null, null], 'not yet an hour');
    clock.advance(MINUTE);
    // Why one after the other on SQLite: two connections of one process would wait on each other's
    // lock synchronously (SQLite has one serving instance; a second process is what would race).
    const signed = backend.name === 'postgres' ? await Promise.all([a.write(resignIfDue), b.write(resignIfDue)]) : [await a.write(resignIfDue), await b.write(resignIfDue)];
    assert.deepEqual(signed.filter((v) => v !== null), [3], `one instance signs version 3: ${JSON.stringify(signed)}`);
    const third = await latest();
    assert.equal(third?.version, 3);
    const ts = parseMetadata(MetadataKind.Timestamp, third!.bytes);
    assert.equal(ts.signed.snapshotMeta.version, 2, 'the same snapshot');
    assert.equal(Date.parse(ts.signed.expires), Math.floor(clock.now() / 1000) * 1000 + 86_400_000);
    // The bundle still verifies with tuf-js from root 1.
    const bundle = (await a.read((tx) => trustBundle(tx, 1)))!;
    const updater = updaterOver(bytesOf(seeded.root), filesOf(bundle));
    await updater.refresh();
    assert.ok(await updater.getTargetInfo('web/1.0.0/manifest.json'));

    // Half a week on (every hour re-signed), the snapshot is made anew too, naming the same targets.
    for (let h = 0; h < 84; h++) {
      clock.advance(TIMESTAMP_RESIGN_MS);
      await (h % 2 ? a : b).write(resignIfDue);
    }
    const snap = await a.read((tx) => tx.trust.latest('snapshot'));
    assert.equal(snap?.version, 3);
    assert.deepEqual(Object.keys(parseMetadata(MetadataKind.Snapshot, snap!.bytes).signed.meta).sort(), ['app.web.json', 'targets.json']);
  });

  test('a server re-signs on start and on its own timer, on the injected clock', async () => {
    const clock = new FakeClock(Date.now());
    let c: Control<ControlStore> | null = null;
    try {
      c = await startControlOn(backend, { clock, resignCheckMs: MINUTE });
      await seedRepository(c.store, clock.now());
      const version = async () => (await c!.store.read((tx) => tx.trust.latest('timestamp')))?.version;
      assert.equal(await version(), 2);
      clock.advance(TIMESTAMP_RESIGN_MS);
      // The timer's next look (a minute on the fake clock) signs it.
      for (let i = 0; i < 200 && (await version()) === 2; i++) {
        clock.advance(MINUTE);
        await new Promise((r) => setTimeout(r, 10));
      }
      assert.equal(await version(), 3);
      assert.equal(await c.server.resignTimestamp(), null, 'not due again');
    } finally {
      await c?.close();
    }
  });
});
