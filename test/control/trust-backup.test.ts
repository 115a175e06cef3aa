// A backup carries the fleet's TUF repository (docs/design.md §21.4), on each backend and onto the
// other: every published version byte for byte, the online keys, a pending root with its
// signatures and the new online key it names, and a node's trust report; a restored control plane re-signs with the same keys and
// a host on root 1 verifies the result with tuf-js.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { rotateRoot } from '../../src/core/trust/build.js';
import { openStore } from '../../src/control/store/open-store.js';
import type { ControlStore } from '../../src/control/store/store.js';
import { trustBundle } from '../../src/control/trust/bundle-route.js';
import { putPending, resignIfDue, rotateOnlineKeys } from '../../src/control/trust/repository.js';
import { tufKeyOf } from '../../src/platform/trust/tuf-keys.js';
import { testBackupKey } from '../helpers/backup-file.js';
import { FakeClock } from '../helpers/control-harness.js';
import { controlCli } from '../helpers/fleet.js';
import { scratchDir } from '../helpers/scratch.js';
import { describeEachBackend, otherBackend } from '../helpers/store-backends.js';
import { bytesOf, filesOf, seedRepository, signedBy, updaterOver } from '../helpers/trust-admin.js';
import { newKey } from '../helpers/tuf-repo.js';

const everything = (store: ControlStore) =>
  store.read(async (tx) => ({
    metadata: (await Promise.all(['root', 'targets', 'snapshot', 'timestamp', 'app.web'].map((r) => tx.trust.after(r, 0)))).flat(),
    keys: await tx.trust.keys(),
    pendingKeys: await tx.trust.pendingKeys(),
    pending: await tx.trust.pending('root'),
  }));

describeEachBackend((backend) => {
  const dir = scratchDir('steward-trust-backup-');
  const stores: ControlStore[] = [];
  after(async () => {
    for (const s of stores) await s.close();
  });

  test('a backup and restore keep the repository, the keys and the pending root; the restored one re-signs and verifies', async () => {
    const clock = new FakeClock(Date.now());
    const db = await backend.createDatabase();
    const store = await openStore(db, { clock });
    stores.push(store);
    const repo = await seedRepository(store, clock.now());
    // A rotation under way, naming a new director key the server keeps pending.
    const rotated = await store.write((tx) => rotateOnlineKeys(tx, ['director'], false));
    const next = signedBy(rotateRoot(repo.root, { rootKeys: [newKey(), newKey()].map(tufKeyOf), threshold: 1, directorKey: rotated.keys.director.tuf, expires: clock.now() + 86_400_000 * 30 }), repo.rootKeys.slice(0, 1));
    await store.write((tx) => putPending(tx, 'root', bytesOf(next).toString('utf8'), 'adam'));
    const before = await everything(store);
    assert.ok(before.pending);
    assert.equal(before.pendingKeys.length, 1);
    const file = path.join(dir, `${backend.name}.backup`);
    const artifacts = path.join(dir, `${backend.name}-artifacts`);
    const made = await controlCli(db, ['--artifacts', artifacts, 'backup', '--key', testBackupKey().key, '--out', file, '--json']);
    assert.equal(made.code, 0, made.stdout + made.stderr);
    for (const onto of [backend, otherBackend(backend)]) {
      if (!onto) continue;
      const target = await onto.emptyTarget();
      const r = await controlCli(target, ['--artifacts', path.join(dir, `${backend.name}-to-${onto.name}`), 'restore', '--key', testBackupKey().pub, '--from', file, '--json']);
      assert.equal(r.code, 0, r.stdout + r.stderr);
      const restored = await openStore(target, { clock });
      stores.push(restored);
      assert.deepEqual(await everything(restored), before, `onto ${onto.name}`);
      clock.advance(3_600_000);
      assert.ok(await restored.write(resignIfDue), 'the restored control plane re-signs with the same keys');
      const updater = updaterOver(bytesOf(repo.root), filesOf((await restored.read((tx) => trustBundle(tx, 1)))!));
      await updater.refresh();
      assert.ok(await updater.getTargetInfo('web/1.0.0/manifest.json'));
    }
  });
});
