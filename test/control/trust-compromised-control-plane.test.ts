// A compromised control plane (docs/design.md §21, §21.4): an attacker with the database and the online
// keys (snapshot, timestamp, director) signs whatever those keys may sign, writes whatever rows it
// likes, and serves the result in a bundle. None of it makes a target the offline keys never signed
// verify through tuf-js: a forged app targets, a forged top-level targets re-delegating the app to
// the attacker's key, a forged root; its directive for such a version opens, and names a target
// that does not exist. (The host's refusal to install without the target: the helper's tests.)
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { metadataBytes, addReleaseTargets, delegateApp, rotateRoot } from '../../src/core/trust/build.js';
import { delegatedRoleName } from '../../src/core/trust/roles.js';
import type { ControlStore } from '../../src/control/store/store.js';
import { openStore } from '../../src/control/store/open-store.js';
import { trustBundle } from '../../src/control/trust/bundle-route.js';
import { onlineKeys, publishSnapshot, type OnlineKeys } from '../../src/control/trust/repository.js';
import { directorKeysOf, openDirective, signDirective } from '../../src/platform/trust/directive.js';
import { signMetadata, tufKeyOf } from '../../src/platform/trust/tuf-keys.js';
import { FakeClock } from '../helpers/control-harness.js';
import { describeEachBackend } from '../helpers/store-backends.js';
import { manifestBytesOf, newKey } from '../helpers/tuf-repo.js';
import { atVersion, bytesOf, filesOf, seedRepository, updaterOver, type SeededRepository } from '../helpers/trust-admin.js';

describeEachBackend((backend) => {
  let store: ControlStore;
  let repo: SeededRepository;
  let stolen: OnlineKeys;
  const clock = new FakeClock(Date.now());
  const trusted = () => bytesOf(repo.root);

  before(async () => {
    store = await openStore(await backend.createDatabase(), { clock });
    repo = await seedRepository(store, clock.now());
    // The attacker reads the online private keys out of the database.
    stolen = (await store.read((tx) => onlineKeys(tx)))!;
  });
  after(() => store.close());

  // Writes a role's metadata as the attacker, then a fresh snapshot and timestamp signed with the
  // stolen online keys, and answers what a host would be served.
  const serveForged = async (role: string, md: Parameters<typeof metadataBytes>[0]) => {
    await store.write(async (tx) => {
      await tx.trust.publish({ role, version: md.signed.version, bytes: metadataBytes(md).toString('utf8'), createdAt: clock.now() });
      await publishSnapshot(tx, clock.now());
    });
    return filesOf((await store.read((tx) => trustBundle(tx, 1)))!);
  };

  test('the honest repository verifies', async () => {
    const updater = updaterOver(trusted(), filesOf((await store.read((tx) => trustBundle(tx, 1)))!));
    await updater.refresh();
    assert.ok(await updater.getTargetInfo('web/1.0.0/manifest.json'));
  });

  test('a directive the stolen director key signs for an unsigned version opens, and names no target a host can verify', async () => {
    const now = clock.now();
    const directive = signDirective({ nodeId: 'n-victim', app: 'web', version: '6.6.6', attemptId: 'evil-1', issuedAt: now, notAfter: now + 3_600_000 }, stolen.director.key);
    assert.ok(openDirective(directive, directorKeysOf(repo.root), { nodeId: 'n-victim', app: 'web', version: '6.6.6', now }).ok, 'the director key picks');
    const updater = updaterOver(trusted(), filesOf((await store.read((tx) => trustBundle(tx, 1)))!));
    await updater.refresh();
    assert.equal(await updater.getTargetInfo('web/6.6.6/manifest.json'), undefined, 'but among what the offline keys signed');
  });

  test("an app's targets listing a release its keys never signed, signed with every online key: refused", async () => {
    let forged = addReleaseTargets(repo.web, { app: 'web', version: '6.6.6', manifestBytes: manifestBytesOf('web', '6.6.6', clock.now()) });
    forged = atVersion(forged, 10);
    for (const k of [stolen.snapshot.key, stolen.timestamp.key, stolen.director.key]) signMetadata(forged, k);
    const files = await serveForged(delegatedRoleName('web'), forged);
    assert.ok(files.has('10.app.web.json'), 'the forged file is served');
    const updater = updaterOver(trusted(), files);
    await updater.refresh();
    await assert.rejects(updater.getTargetInfo('web/6.6.6/manifest.json'), /app\.web was signed by 0\/2 keys/);
  });

  test('a top-level targets re-delegating the app to an attacker key, signed with the online keys: refused at refresh', async () => {
    const mine = newKey();
    let forged = delegateApp(repo.targets, 'web', [tufKeyOf(mine)], 1);
    forged = atVersion(forged, 20);
    for (const k of [stolen.snapshot.key, stolen.timestamp.key]) signMetadata(forged, k);
    let web = atVersion(addReleaseTargets(repo.web, { app: 'web', version: '6.6.7', manifestBytes: manifestBytesOf('web', '6.6.7', clock.now()) }), 30);
    signMetadata(web, mine);
    await serveForged(delegatedRoleName('web'), web);
    const files = await serveForged('targets', forged);
    const updater = updaterOver(trusted(), files);
    await assert.rejects(updater.refresh(), /targets was signed by 0\/2 keys/);
  });

  test('a root rotation to attacker keys, signed with the online keys: refused, and the host stays on its root', async () => {
    const mine = [newKey(), newKey()];
    const forged = rotateRoot(repo.root, { rootKeys: mine.map(tufKeyOf), threshold: 1, targetsKeys: mine.map(tufKeyOf), targetsThreshold: 1, expires: clock.now() + 86_400_000 });
    for (const k of [...mine, stolen.snapshot.key, stolen.timestamp.key, stolen.director.key]) signMetadata(forged, k);
    await store.write((tx) => tx.trust.publish({ role: 'root', version: 2, bytes: metadataBytes(forged).toString('utf8'), createdAt: clock.now() }));
    const files = filesOf((await store.read((tx) => trustBundle(tx, 1)))!);
    assert.ok(files.has('2.root.json'));
    const updater = updaterOver(trusted(), files);
    await assert.rejects(updater.refresh(), /root was signed by 0\/2 keys/);
  });

});
