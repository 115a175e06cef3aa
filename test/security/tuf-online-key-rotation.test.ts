// Recovery from a compromised control plane (docs/trust.md): the control plane makes new online
// keys, the root key holders publish root 2 naming them, and a real helper on root 1 follows to
// root 2 from the control plane's own bundle. From then on what the stolen online keys sign (a
// timestamp, a snapshot, a directive) is refused, each with its reason; the new keys' is taken.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import type { TrustBundle } from '../../src/core/control-api.js';
import { canonicalBytes } from '../../src/core/canonical-json.js';
import { addReleaseTargets, metadataBytes, newSnapshot, newTimestamp, rotateRoot } from '../../src/core/trust/build.js';
import { migrateStore, openStore } from '../../src/control/store/open-store.js';
import type { ControlStore } from '../../src/control/store/store.js';
import { trustBundle } from '../../src/control/trust/bundle-route.js';
import { onlineKeys, putAppTargets, putPending, rotateOnlineKeys, type OnlineKeys } from '../../src/control/trust/repository.js';
import { signDirective } from '../../src/platform/trust/directive.js';
import { signMetadata } from '../../src/platform/trust/tuf-keys.js';
import { callHelper } from '../../src/protocol/client.js';
import { helperClient } from '../../src/protocol/helper-client.js';
import { FakeClock } from '../helpers/control-harness.js';
import { useHost } from '../helpers/host-fixture.js';
import { makeReleaseKey, manifestFor, processApp } from '../helpers/host.js';
import { scratchDir } from '../helpers/scratch.js';
import { bytesOf, seedRepository, signedBy } from '../helpers/trust-admin.js';
import { envelopeOf, NODE_ID, refusedWith, trustedVersions, webRelease, type TufHost } from '../helpers/tuf-host.js';

const DAY = 86_400_000;

test('a host on root 1 follows the root that names new online keys; the stolen keys sign nothing it takes', { timeout: 180_000 }, async (t) => {
  const clock = new FakeClock(Date.now());
  const db = path.join(scratchDir('steward-online-rotation-'), 'control.db');
  await migrateStore(db, { create: true });
  const store: ControlStore = await openStore(db, { clock });
  t.after(() => store.close());
  const repo = await seedRepository(store, clock.now());
  // web 1.1.0, a real release, a target of app.web signed by two of web's keys.
  const tgz = webRelease('1.1.0');
  const manifestBytes = canonicalBytes(manifestFor('web', '1.1.0', tgz));
  const web = signedBy(addReleaseTargets(repo.web, { app: 'web', version: '1.1.0', manifestBytes }), repo.webKeys.slice(0, 2));
  await store.write((tx) => putAppTargets(tx, 'web', bytesOf(web).toString('utf8')));
  const stolen = (await store.read((tx) => onlineKeys(tx))) as OnlineKeys;

  // The host: enrolled, trusting root 1, refreshed from the control plane's bundle.
  const host = useHost(t, { apps: { web: processApp() } });
  makeReleaseKey(host, ['web']);
  mkdirSync(path.dirname(host.paths.nodeState), { recursive: true, mode: 0o755 });
  writeFileSync(host.paths.nodeState, JSON.stringify({ schemaVersion: 1, nodeId: NODE_ID }), { mode: 0o600 });
  await host.startHelper();
  const helperSock = helperClient((request, o) => callHelper(host.paths.helperSock, request, o));
  const adminSock = helperClient((request, o) => callHelper(host.paths.adminSock, request, o));
  const root1 = bytesOf(repo.root);
  await adminSock.trustSetRoot({ upload: root1.length }, { upload: { size: root1.length, stream: Readable.from([root1]) } });
  const h = { host, helperSock } as unknown as TufHost;
  const refresh = (bundle: TrustBundle) => {
    const bytes = Buffer.from(JSON.stringify(bundle));
    return helperSock.trustRefresh({ upload: bytes.length }, { upload: { size: bytes.length, stream: Readable.from([bytes]) } });
  };
  const served = async () => (await store.read((tx) => trustBundle(tx, 1))) as TrustBundle;
  assert.equal((await refresh(await served())).rootVersion, 1);

  // The rotation, as trust rotate --new-online and two root key holders' sign-root make it.
  await store.write(async (tx) => {
    const r = await rotateOnlineKeys(tx, ['snapshot', 'timestamp', 'director'], false);
    const root2 = rotateRoot(repo.root, { snapshotKey: r.keys.snapshot.tuf, timestampKey: r.keys.timestamp.tuf, directorKey: r.keys.director.tuf, expires: clock.now() + 365 * DAY });
    const done = await putPending(tx, 'root', bytesOf(signedBy(root2, repo.rootKeys.slice(0, 2))).toString('utf8'), 'test');
    assert.deepEqual([done.published, done.switched], [true, ['snapshot', 'timestamp', 'director']]);
  });
  const fresh = (await store.read((tx) => onlineKeys(tx))) as OnlineKeys;
  const after = await refresh(await served());
  assert.equal(after.rootVersion, 2, 'the host took root 2');
  const trusted = await trustedVersions(h);

  // The thief's metadata, each one version on: a timestamp signed with the stolen timestamp key.
  const bundle = await served();
  const file = (name: string) => Buffer.from(bundle.files[name]!, 'base64');
  const snapName = Object.keys(bundle.files).find((n) => /^\d+\.snapshot\.json$/.test(n))!;
  const snapVersion = Number(snapName.split('.')[0]);
  const tsVersion = trusted.timestampVersion!;
  const forgedTs = (snapBytes: Buffer, snapV: number, key: OnlineKeys['timestamp']['key']) => {
    const ts = newTimestamp(snapBytes, snapV, tsVersion + 1, clock.now());
    signMetadata(ts, key);
    return metadataBytes(ts);
  };
  const withFiles = (files: Record<string, Buffer>): TrustBundle => ({ ...bundle, files: { ...bundle.files, ...Object.fromEntries(Object.entries(files).map(([n, b]) => [n, b.toString('base64')])) } });
  const refused = async (b: TrustBundle, why: RegExp) => {
    await assert.rejects(refresh(b), refusedWith('TRUST_SIGNATURE', why));
    assert.deepEqual(await trustedVersions(h), trusted, 'nothing was trusted from the refused bundle');
  };
  await refused(withFiles({ 'timestamp.json': forgedTs(file(snapName), snapVersion, stolen.timestamp.key) }), /timestamp/);
  // A snapshot signed with the stolen snapshot key, under a timestamp the new key signed (as if
  // only the snapshot key had been kept by the thief): refused too.
  const snapshot = newSnapshot(new Map([['targets', 1], ['app.web', 2]]), snapVersion + 1, clock.now());
  signMetadata(snapshot, stolen.snapshot.key);
  const snapBytes = metadataBytes(snapshot);
  await refused(withFiles({ [`${snapVersion + 1}.snapshot.json`]: snapBytes, 'timestamp.json': forgedTs(snapBytes, snapVersion + 1, fresh.timestamp.key) }), /snapshot/);

  // A directive of the stolen director key: refused before anything is staged; the new key's is obeyed.
  const update = (attemptId: string, key: OnlineKeys['director']['key']) => {
    const now = Date.now();
    const directive = signDirective({ nodeId: NODE_ID, app: 'web', version: '1.1.0', attemptId, issuedAt: now - 1000, notAfter: now + 3_600_000 }, key);
    return helperSock.update({ app: 'web', version: '1.1.0', manifest: envelopeOf(manifestBytes), attemptId, upload: tgz.length, by: 'steward-agent', directive }, { upload: { size: tgz.length, stream: Readable.from([tgz]) } });
  };
  await assert.rejects(update('run-1.web.1', stolen.director.key), refusedWith('TRUST_NOT_DIRECTED', /unknown-key/));
  const ok = await update('run-2.web.1', fresh.director.key);
  assert.equal('outcome' in ok && ok.outcome, 'active', JSON.stringify(ok));
});
