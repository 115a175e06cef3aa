import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, createPublicKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Key, Metadata, MetadataKind } from '@tufjs/models';
import { addReleaseTargets, delegateApp, newAppTargets, newRoot, newTopTargets, rotateRoot } from '../../src/core/trust/build.js';
import { DIRECTOR_FIELD, SIGNED_AT_FIELD, tufTime } from '../../src/core/trust/roles.js';
import { signatureCount, signMetadata, tufKeyIdOf, tufKeyOf } from '../../src/platform/trust/tuf-keys.js';
import { manifestBytesOf, makeTufRepo, newKey } from '../helpers/tuf-repo.js';
import { updaterFor } from '../helpers/tuf-fetcher.js';

const DAY = 86_400_000;

test("tufKeyIdOf is TUF's key id: python-tuf's test vector, and the raw key's hex", () => {
  // tests/repository_data/repository/metadata/root_sequence/2.root.json of python-tuf: the
  // targets key, whose id securesystemslib computed over the key object as it is there.
  const json = { keyid_hash_algorithms: ['sha256', 'sha512'], keytype: 'ed25519', keyval: { public: '89f28bd4ede5ec3786ab923fd154f39588d20881903e69c7b08fb504c6750815' }, scheme: 'ed25519' };
  assert.equal(tufKeyIdOf(Key.fromJSON('label', json)), '65171251a9aff5a8b3143a813481cb07f6e0de4eb197c767837fe4491b739093');
  const priv = newKey();
  const key = tufKeyOf(priv);
  const raw = Buffer.from(createPublicKey(priv).export({ format: 'jwk' }).x as string, 'base64url');
  assert.deepEqual(key.toJSON(), { keytype: 'ed25519', scheme: 'ed25519', keyval: { public: raw.toString('hex') } });
  const expected = createHash('sha256').update(`{"keytype":"ed25519","keyval":{"public":"${raw.toString('hex')}"},"scheme":"ed25519"}`).digest('hex');
  assert.equal(key.keyID, expected);
  assert.equal(tufKeyIdOf(priv), expected);
  assert.equal(tufKeyIdOf(createPublicKey(priv)), expected);
});

test('a signature made by signMetadata verifies through @tufjs/models, and covers the unrecognized fields', () => {
  const rootKeys = [newKey(), newKey(), newKey()];
  const director = newKey();
  const root = newRoot({ rootKeys: rootKeys.map(tufKeyOf), snapshotKey: tufKeyOf(newKey()), timestampKey: tufKeyOf(newKey()), directorKey: tufKeyOf(director), expires: Date.now() + DAY });
  assert.deepEqual(root.signed.roles['root']!.threshold, 2);
  assert.deepEqual(root.signed.roles['targets']!.keyIDs, root.signed.roles['root']!.keyIDs, 'targets takes the root keys unless given');
  assert.equal(root.signed.consistentSnapshot, true);
  assert.deepEqual(root.signed.unrecognizedFields[DIRECTOR_FIELD], { keyids: [tufKeyIdOf(director)], threshold: 1 });
  assert.ok(root.signed.keys[tufKeyIdOf(director)], "the director's key is in root.keys");
  signMetadata(root, rootKeys[0]!);
  assert.throws(() => root.verifyDelegate('root', root), /signed by 1\/2/);
  signMetadata(root, rootKeys[1]!);
  signMetadata(root, rootKeys[1]!); // replaces its own signature, never counts twice
  assert.equal(Object.keys(root.signatures).length, 2);
  root.verifyDelegate('root', root);
  assert.equal(signatureCount(root, rootKeys.map(tufKeyOf)), 2);
  // Read back from its bytes, as a client does: the field is still there and still signed.
  const back = Metadata.fromJSON(MetadataKind.Root, JSON.parse(JSON.stringify(root.toJSON())));
  back.verifyDelegate('root', back);
  const tampered = JSON.parse(JSON.stringify(root.toJSON()));
  tampered.signed[DIRECTOR_FIELD].keyids = [tufKeyIdOf(rootKeys[0]!)];
  const t = Metadata.fromJSON(MetadataKind.Root, tampered);
  assert.throws(() => t.verifyDelegate('root', t), /signed by 0\/2/);
});

test("a repository built by src/core/trust is accepted by tuf-js's Updater, and its targets' hashes are the bytes'", async () => {
  const now = Date.now();
  const repo = makeTufRepo({ now });
  const { updater, fetcher } = updaterFor(repo);
  const info = await updater.getTargetInfo('web/1.0.0/manifest.json');
  assert.ok(info, 'the target is found');
  const bytes = manifestBytesOf('web', '1.0.0', now);
  assert.equal(info.length, bytes.length);
  assert.equal(info.hashes['sha256'], createHash('sha256').update(bytes).digest('hex'));
  assert.equal(info.hashes['sha512'], createHash('sha512').update(bytes).digest('hex'));
  assert.deepEqual(info.custom, { steward: { app: 'web', version: '1.0.0' } });
  assert.equal(await updater.getTargetInfo('web/9.9.9/manifest.json'), undefined);
  const names = fetcher.asked.map((u) => u.slice(u.lastIndexOf('/') + 1));
  assert.deepEqual(names, ['2.root.json', 'timestamp.json', '1.snapshot.json', '2.targets.json', '2.app.web.json']);
  // The timestamp carries when it was signed, and expires a day later.
  assert.equal(repo.timestamp.signed.unrecognizedFields[SIGNED_AT_FIELD], tufTime(now));
  assert.equal(repo.timestamp.signed.expires, tufTime(now + DAY));
});

test('a root rotated across two versions is followed by a client that trusts version 1', async () => {
  const repo = makeTufRepo();
  const newRootKeys = [newKey(), newKey(), newKey()];
  let prev = repo.roots[0]!;
  let prevKeys = repo.keys.root;
  // v2 swaps one root key; v3 all of them. Each is signed by a threshold of the old and the new.
  for (const next of [[prevKeys[0]!, prevKeys[1]!, newRootKeys[0]!], newRootKeys]) {
    const rotated = rotateRoot(prev, { rootKeys: next.map(tufKeyOf), expires: Date.now() + 365 * DAY });
    assert.equal(rotated.signed.version, prev.signed.version + 1);
    for (const k of new Set([...prevKeys.slice(0, 2), ...next.slice(0, 2)])) signMetadata(rotated, k);
    repo.put(`${rotated.signed.version}.root.json`, rotated);
    prev = rotated;
    prevKeys = next;
  }
  // The targets role kept its keys through the rotations (rotateRoot changes only what it is given).
  assert.deepEqual(prev.signed.roles['targets']!.keyIDs, repo.roots[0]!.signed.roles['targets']!.keyIDs);
  const { updater, metadataDir } = updaterFor(repo);
  assert.ok(await updater.getTargetInfo('web/1.0.0/manifest.json'));
  const trusted = JSON.parse(readFileSync(path.join(metadataDir, 'root.json'), 'utf8'));
  assert.equal(trusted.signed.version, 3);
});

test('a root signed by one key fewer than the threshold is refused by the Updater', async () => {
  const repo = makeTufRepo();
  const rotated = rotateRoot(repo.roots[0]!, { expires: Date.now() + 365 * DAY });
  signMetadata(rotated, repo.keys.root[0]!);
  repo.put('2.root.json', rotated);
  const { updater } = updaterFor(repo);
  await assert.rejects(updater.refresh(), /root was signed by 1\/2 keys/);
});

test("another app's delegation cannot sign an app's targets", async () => {
  const now = Date.now();
  const repo = makeTufRepo({ now, releases: [{ app: 'web', version: '1.0.0' }, { app: 'api', version: '2.0.0' }] });
  // app.api's keys sign a target under web/: the path is not theirs.
  const api = addReleaseTargets(repo.apps.get('api')!, { app: 'web', version: '6.6.6', manifestBytes: manifestBytesOf('web', '6.6.6', now) });
  repo.keys.apps.get('api')!.forEach((k) => signMetadata(api, k));
  repo.apps.set('api', api);
  repo.publish();
  const { updater } = updaterFor(repo);
  assert.ok(await updater.getTargetInfo('api/2.0.0/manifest.json'), "api's own release is found");
  assert.ok(await updater.getTargetInfo('web/1.0.0/manifest.json'), "web's own release is found");
  assert.equal(await updater.getTargetInfo('web/6.6.6/manifest.json'), undefined, "app.api's word on web is not taken");
});

test('an app delegation signed by fewer keys than its threshold is not trusted', async () => {
  const repo = makeTufRepo();
  const web = addReleaseTargets(repo.apps.get('web')!, { app: 'web', version: '1.1.0', manifestBytes: manifestBytesOf('web', '1.1.0') });
  signMetadata(web, repo.keys.apps.get('web')![0]!);
  repo.apps.set('web', web);
  repo.publish();
  const { updater } = updaterFor(repo);
  await assert.rejects(updater.getTargetInfo('web/1.1.0/manifest.json'), /app\.web was signed by 1\/2 keys/);
});

test('delegateApp replaces an app\'s delegation and keeps the others; addReleaseTargets adds index and downgrade targets', () => {
  const expires = Date.now() + DAY;
  const [a, b, c] = [newKey(), newKey(), newKey()].map(tufKeyOf) as [Key, Key, Key];
  let top = delegateApp(delegateApp(newTopTargets({ expires }), 'web', [a, b], 2), 'api', [c], 1);
  top = delegateApp(top, 'web', [c], 1);
  assert.equal(top.signed.version, 4);
  const roles = top.signed.delegations!.roles!;
  assert.deepEqual(Object.keys(roles).sort(), ['app.api', 'app.web']);
  assert.deepEqual(roles['app.web']!.keyIDs, [c.keyID]);
  assert.deepEqual(roles['app.web']!.paths, ['web/*/*']);
  assert.equal(roles['app.web']!.terminating, true);
  assert.deepEqual(Object.keys(top.signed.delegations!.keys), [c.keyID], 'keys no role names are dropped');
  assert.throws(() => delegateApp(top, 'web', [a], 2), /threshold of 2 cannot be met by 1 keys/);

  const index = Buffer.from('{"files":[]}');
  const sri = `sha512-${createHash('sha512').update(index).digest('base64')}`;
  const manifest = Buffer.from(
    JSON.stringify({ expires: expires, index: { integrity: sri, size: index.length, url: 'web-1.0.0.index.json' }, integrity: `sha512-${'A'.repeat(86)}==`, name: 'web', size: 1, url: 'u', version: '1.0.0' }),
  );
  const downgrade = Buffer.from(`{"app":"web","notAfter":${expires},"version":"1.0.0"}`);
  const app = addReleaseTargets(newAppTargets({ expires }), { app: 'web', version: '1.0.0', manifestBytes: manifest, indexBytes: index, downgradeBytes: downgrade });
  assert.deepEqual(Object.keys(app.signed.targets).sort(), ['web/1.0.0/downgrade.json', 'web/1.0.0/index.json', 'web/1.0.0/manifest.json']);
  assert.equal(app.signed.targets['web/1.0.0/index.json']!.hashes['sha512'], Buffer.from(sri.slice(7), 'base64').toString('hex'));
  assert.throws(() => addReleaseTargets(app, { app: 'web', version: '1.0.0', manifestBytes: manifest, indexBytes: Buffer.from('{}') }), /not the index/);
  assert.throws(() => addReleaseTargets(app, { app: 'web', version: '1.0.1', manifestBytes: manifest }), /not web 1.0.1/);
  assert.throws(() => addReleaseTargets(app, { app: 'web', version: '1.0.0', manifestBytes: Buffer.from(JSON.stringify(JSON.parse(manifest.toString()), null, 1)) }), /not canonical/);
  assert.throws(() => addReleaseTargets(app, { app: 'web', version: '1.0.0', manifestBytes: manifest, downgradeBytes: Buffer.from(`{"app":"api","notAfter":1,"version":"1.0.0"}`) }), /for api 1.0.0/);
});
