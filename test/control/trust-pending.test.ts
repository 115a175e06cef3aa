// The pending root and targets (docs/design.md §21.2) on both backends, through the store: a pending
// version overtaken by one published meanwhile (another instance, another operator) is refused
// when its last signature comes, never published over it; signatures with nothing pending are NOT_FOUND.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { StewardError } from '../../src/core/errors.js';
import { metadataBytes, rotateRoot } from '../../src/core/trust/build.js';
import { openStore } from '../../src/control/store/open-store.js';
import type { ControlStore } from '../../src/control/store/store.js';
import { addSignatures, putPending } from '../../src/control/trust/repository.js';
import { tufKeyOf } from '../../src/platform/trust/tuf-keys.js';
import { FakeClock } from '../helpers/control-harness.js';
import { describeEachBackend } from '../helpers/store-backends.js';
import { seedRepository, signaturesOf, signedBy, type SeededRepository } from '../helpers/trust-admin.js';
import { newKey } from '../helpers/tuf-repo.js';

describeEachBackend((backend) => {
  let store: ControlStore;
  let repo: SeededRepository;
  const clock = new FakeClock(Date.now());
  before(async () => {
    store = await openStore(await backend.createDatabase(), { clock });
    repo = await seedRepository(store, clock.now());
  });
  after(() => store.close());

  test('a pending root overtaken by a root published meanwhile is refused with 409 when its threshold would be met', async () => {
    const next = rotateRoot(repo.root, { rootKeys: [newKey(), newKey()].map(tufKeyOf), threshold: 1, expires: clock.now() + 86_400_000 * 30 });
    const r = await store.write((tx) => putPending(tx, 'root', metadataBytes(signedBy(next, repo.rootKeys.slice(0, 1))).toString('utf8'), 'adam'));
    assert.deepEqual([r.published, r.signatures.map((t) => [t.have, t.need])], [false, [[1, 2], [0, 1]]]);
    // Another instance publishes a root 2 of its own (written as it would be).
    const other = signedBy(rotateRoot(repo.root, { expires: clock.now() + 86_400_000 * 30 }), repo.rootKeys);
    await store.write((tx) => tx.trust.publish({ role: 'root', version: 2, bytes: metadataBytes(other).toString('utf8'), createdAt: clock.now() }));
    await assert.rejects(
      store.write((tx) => addSignatures(tx, 'root', signaturesOf(next, [repo.rootKeys[1]!]), 'bob')),
      (err: unknown) => err instanceof StewardError && err.code === 'STATE_INVALID' && err.details.httpStatus === 409 && /version 2 is not the next one/.test(err.message),
    );
    assert.equal((await store.read((tx) => tx.trust.latest('root')))?.bytes, metadataBytes(other).toString('utf8'));
  });

  test('signatures with no pending targets are NOT_FOUND', async () => {
    await assert.rejects(store.write((tx) => addSignatures(tx, 'targets', signaturesOf(repo.targets, [repo.rootKeys[0]!]), null)), (e: unknown) => e instanceof StewardError && e.code === 'NOT_FOUND');
  });
});
