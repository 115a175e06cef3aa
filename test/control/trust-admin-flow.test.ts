// The admin API of the fleet's TUF repository end to end against a real server (docs/design.md
// §21.2, §21.4): online keys made once (the same answered again); a root with three offline keys one signature short stays
// pending, the threshold met publishes it; the top-level targets under the root's targets role;
// an app's delegated targets under its delegation only (another app's keys refused, an older
// version replayed refused); a root rotation needing both the old and the new threshold; every
// change and refusal audited; what a node fetches from /v1/trust/bundle verifies with tuf-js.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { MetadataKind, Metadata, type Root, type Targets } from '@tufjs/models';
import { addReleaseTargets, delegateApp, metadataBytes, newAppTargets, newRoot, newTopTargets, rotateRoot } from '../../src/core/trust/build.js';
import { tufKeyOf } from '../../src/platform/trust/tuf-keys.js';
import { addOperator, adminCall } from '../helpers/admin-client.js';
import { enrollNodes, FakeClock, startControlInProcess, type Control, type FakeNode } from '../helpers/control-harness.js';
import { manifestBytesOf, newKey } from '../helpers/tuf-repo.js';
import { atVersion, filesOf, getBundle, keyOfJson, postSignatures, putMetadata, signaturesOf, signedBy, updaterOver, type OnlineKeysAnswer } from '../helpers/trust-admin.js';

const DAY = 86_400_000;
let c: Control;
let admin: string;
let viewer: string;
let node: FakeNode;
const rootKeys = [newKey(), newKey(), newKey()];
const webKeys = [newKey(), newKey(), newKey()];
const apiKeys = [newKey(), newKey(), newKey()];
let online: OnlineKeysAnswer;
let root1: Metadata<Root>;
let targets1: Metadata<Targets>;
let root2: Metadata<Root>;
let newRootKeys: ReturnType<typeof newKey>[];

before(async () => {
  // The server's clock at the real time: tuf-js checks expiry against the real clock.
  c = await startControlInProcess({ admin: {}, clock: new FakeClock(Date.now()) });
  admin = await addOperator(c.store, 'adam', 'admin');
  viewer = await addOperator(c.store, 'vera', 'viewer');
  [node] = await enrollNodes(c, 1) as [FakeNode];
});
after(() => c.close());

const now = () => c.clock.now();
const status = async () => (await adminCall(c.server.url, '/v1/admin/trust', { token: viewer })).body;
const bundle = (root: number) => getBundle(c.server.url, node.nodeId, node.node.privateKey, now(), `?root=${root}`);
const auditActions = async () => (await c.store.read((tx) => tx.audit.page(0, 0, 1000))).map((a) => a.action).filter((a) => a.startsWith('trust.') || a === 'denied');

test('before a repository: the status says so, a node is told 404, the online keys are made once and answered again', async () => {
  const s = await status();
  assert.deepEqual([s.repository, s.root, s.onlineKeys, s.pending], [false, null, null, { root: null, targets: null }]);
  assert.equal((await bundle(1)).status, 404);
  assert.equal((await adminCall(c.server.url, '/v1/admin/trust/online-keys', { method: 'POST', token: viewer, json: {} })).status, 403);
  const made = await adminCall(c.server.url, '/v1/admin/trust/online-keys', { method: 'POST', token: admin, json: {} });
  assert.equal(made.status, 200, JSON.stringify(made.body));
  online = made.body.onlineKeys;
  // The same request again (a retry, trust init --replace) gets the same keys, never new ones.
  const again = await adminCall(c.server.url, '/v1/admin/trust/online-keys', { method: 'POST', token: admin, json: {} });
  assert.equal(again.status, 200, JSON.stringify(again.body));
  assert.deepEqual(again.body.onlineKeys, online);
  // New keys before a root is published: refused (a rotation is of a published root).
  const early = await adminCall(c.server.url, '/v1/admin/trust/online-keys', { method: 'POST', token: admin, json: { rotate: ['timestamp'] } });
  assert.deepEqual([early.status, early.body.error.code], [400, 'USAGE']);
  assert.deepEqual((await status()).onlineKeys, { snapshot: online.snapshot.keyid, timestamp: online.timestamp.keyid, director: online.director.keyid });
});

test('a root one signature short stays pending; the threshold met publishes it', async () => {
  root1 = newRoot({ rootKeys: rootKeys.map(tufKeyOf), threshold: 2, snapshotKey: keyOfJson(online.snapshot), timestampKey: keyOfJson(online.timestamp), directorKey: keyOfJson(online.director), expires: now() + 365 * DAY });
  // A root that does not name the control plane's online keys is refused.
  const foreign = newRoot({ rootKeys: rootKeys.map(tufKeyOf), threshold: 2, snapshotKey: tufKeyOf(newKey()), timestampKey: keyOfJson(online.timestamp), directorKey: keyOfJson(online.director), expires: now() + 365 * DAY });
  assert.equal((await putMetadata(c.server.url, admin, '/v1/admin/trust/pending/root', foreign)).body.error.code, 'USAGE');
  assert.equal((await putMetadata(c.server.url, admin, '/v1/admin/trust/pending/root', atVersion(root1, 2))).status, 409, 'the first root is version 1');
  const put = await putMetadata(c.server.url, admin, '/v1/admin/trust/pending/root', signedBy(root1, [rootKeys[0]!]));
  assert.equal(put.status, 200, JSON.stringify(put.body));
  assert.equal(put.body.published, false);
  assert.deepEqual(put.body.signatures.map((t: { have: number; need: number }) => [t.have, t.need]), [[1, 2]]);
  const pending = (await status()).pending.root;
  assert.equal(pending.version, 1);
  // What another operator signs: the pending file, its first signature in it.
  const fetched = Metadata.fromJSON(MetadataKind.Root, pending.metadata);
  assert.deepEqual(Object.keys(fetched.signatures), [tufKeyOf(rootKeys[0]!).keyID]);
  assert.deepEqual(fetched.signed.toJSON(), root1.signed.toJSON());
  // A signature by a key the root does not name, or one that does not verify, is refused.
  const stranger = signaturesOf(root1, [newKey()]);
  assert.equal((await postSignatures(c.server.url, admin, 'root', stranger)).body.error.code, 'FORBIDDEN');
  const bad = signaturesOf(root1, [rootKeys[1]!]).map((s) => ({ ...s, sig: s.sig.replace(/^./, (ch) => (ch === '0' ? '1' : '0')) }));
  assert.equal((await postSignatures(c.server.url, admin, 'root', bad)).body.error.code, 'SIGNATURE_INVALID');
  const done = await postSignatures(c.server.url, admin, 'root', signaturesOf(root1, [rootKeys[1]!]));
  assert.equal(done.status, 200, JSON.stringify(done.body));
  assert.equal(done.body.published, true);
  const s = await status();
  assert.deepEqual([s.root.version, s.root.threshold, s.root.keyids.length, s.pending.root], [1, 2, 3, null]);
  assert.equal(s.repository, false, 'no timestamp before the targets');
});

test('the top-level targets publish under the root targets role, with a snapshot and a timestamp', async () => {
  let t = newTopTargets({ expires: now() + 365 * DAY });
  t = delegateApp(t, 'web', webKeys.map(tufKeyOf), 2);
  t = delegateApp(t, 'api', apiKeys.map(tufKeyOf), 2);
  targets1 = atVersion(t, 1);
  // Signed by keys the root's targets role does not name: refused.
  assert.equal((await putMetadata(c.server.url, admin, '/v1/admin/trust/pending/targets', signedBy(targets1, [webKeys[0]!]))).body.error.code, 'FORBIDDEN');
  const put = await putMetadata(c.server.url, admin, '/v1/admin/trust/pending/targets', signedBy(targets1, [rootKeys[0]!, rootKeys[2]!]));
  assert.equal(put.status, 200, JSON.stringify(put.body));
  assert.equal(put.body.published, true);
  const s = await status();
  assert.deepEqual([s.repository, s.targets.version, s.snapshot.version, s.timestamp.version], [true, 1, 1, 1]);
  assert.deepEqual(s.apps.map((a: { app: string; threshold: number; version: number | null }) => [a.app, a.threshold, a.version]), [['api', 2, null], ['web', 2, null]]);
});

test("an app's targets publish under its delegation only; another app's keys and an older version are refused", async () => {
  const web2 = addReleaseTargets(newAppTargets({ expires: now() + 365 * DAY }), { app: 'web', version: '1.0.0', manifestBytes: manifestBytesOf('web', '1.0.0', now()) });
  const byApi = await putMetadata(c.server.url, admin, '/v1/admin/trust/apps/web', signedBy(web2, apiKeys.slice(0, 2)));
  assert.deepEqual([byApi.status, byApi.body.error.code], [422, 'SIGNATURE_INVALID']);
  const short = await putMetadata(c.server.url, admin, '/v1/admin/trust/apps/web', signedBy(web2, webKeys.slice(0, 1)));
  assert.equal(short.body.error.code, 'SIGNATURE_INVALID');
  assert.equal((await putMetadata(c.server.url, admin, '/v1/admin/trust/apps/db', signedBy(web2, webKeys.slice(0, 2)))).body.error.code, 'FORBIDDEN', 'no delegation');
  const ok = await putMetadata(c.server.url, admin, '/v1/admin/trust/apps/web', signedBy(web2, webKeys.slice(0, 2)));
  assert.equal(ok.status, 200, JSON.stringify(ok.body));
  assert.deepEqual([ok.body.role, ok.body.version], ['app.web', 2]);
  const replay = await putMetadata(c.server.url, admin, '/v1/admin/trust/apps/web', signedBy(web2, webKeys.slice(1, 3)));
  assert.equal(replay.status, 409, 'the same version again');
  const older = await putMetadata(c.server.url, admin, '/v1/admin/trust/apps/web', signedBy(atVersion(web2, 1), webKeys.slice(0, 2)));
  assert.equal(older.status, 409, 'an older version');
  const s = await status();
  assert.deepEqual([s.snapshot.version, s.timestamp.version, s.apps.find((a: { app: string }) => a.app === 'web').version], [2, 2, 2]);
});

test('a node fetches a bundle that tuf-js verifies from root 1; bad queries and strangers are refused', async () => {
  assert.equal((await adminCall(c.server.url, '/v1/trust/bundle?root=1')).status, 401);
  for (const q of ['', '?root=0', '?root=x', '?root=1&root=2']) assert.equal((await getBundle(c.server.url, node.nodeId, node.node.privateKey, now(), q)).body.error.code, 'BAD_QUERY', q);
  const b = await bundle(1);
  assert.equal(b.status, 200, JSON.stringify(b.body));
  assert.deepEqual(Object.keys(b.body.files).sort(), ['1.targets.json', '2.app.web.json', '2.snapshot.json', 'timestamp.json']);
  const updater = updaterOver(metadataBytes(signedBy(root1, rootKeys.slice(0, 2))), filesOf(b.body));
  await updater.refresh();
  assert.ok(await updater.getTargetInfo('web/1.0.0/manifest.json'));
  assert.equal(await updater.getTargetInfo('web/9.9.9/manifest.json'), undefined);
});

test("a root rotation needs the previous root's threshold and its own; a bundle carries it to a host on root 1", async () => {
  newRootKeys = [newKey(), newKey(), newKey()];
  root2 = rotateRoot(root1, { rootKeys: newRootKeys.map(tufKeyOf), threshold: 2, expires: now() + 365 * DAY });
  const put = await putMetadata(c.server.url, admin, '/v1/admin/trust/pending/root', signedBy(root2, newRootKeys.slice(0, 2)));
  assert.equal(put.status, 200, JSON.stringify(put.body));
  assert.equal(put.body.published, false, "the new keys alone are not enough");
  assert.deepEqual(put.body.signatures.map((t: { have: number; need: number }) => [t.have, t.need]), [[0, 2], [2, 2]]);
  const one = await postSignatures(c.server.url, admin, 'root', signaturesOf(root2, [rootKeys[0]!]));
  assert.equal(one.body.published, false);
  const two = await postSignatures(c.server.url, admin, 'root', signaturesOf(root2, [rootKeys[2]!]));
  assert.equal(two.body.published, true, JSON.stringify(two.body));
  assert.deepEqual(two.body.warnings, [], 'the targets role kept its keys');
  assert.equal((await status()).root.version, 2);
  const b = await bundle(1);
  assert.ok(b.body.files['2.root.json']);
  const trusted = signedBy(root1, rootKeys.slice(0, 2));
  const updater = updaterOver(metadataBytes(trusted), filesOf(b.body));
  await updater.refresh();
  assert.ok(await updater.getTargetInfo('web/1.0.0/manifest.json'));
  assert.equal((await bundle(2)).body.files['2.root.json'], undefined, 'a host on root 2 gets no root');
  // A root replayed at an old version is refused.
  assert.equal((await putMetadata(c.server.url, admin, '/v1/admin/trust/pending/root', signedBy(root1, rootKeys))).status, 409);
});

test('a rotation of the targets keys says the targets must be signed again; once they are, a host on root 1 verifies it all', async () => {
  const targetsKeys = [newKey(), newKey(), newKey()];
  const root3 = rotateRoot(root2, { targetsKeys: targetsKeys.map(tufKeyOf), targetsThreshold: 2, expires: now() + 365 * DAY });
  const put = await putMetadata(c.server.url, admin, '/v1/admin/trust/pending/root', signedBy(root3, newRootKeys.slice(0, 2)));
  assert.equal(put.body.published, true, JSON.stringify(put.body));
  assert.equal(put.body.warnings.length, 1);
  assert.match(put.body.warnings[0], /targets version 1 are not signed by this root's targets role/);
  assert.equal((await status()).targets.verifies, false);
  // The old targets keys no longer sign them.
  assert.equal((await putMetadata(c.server.url, admin, '/v1/admin/trust/pending/targets', signedBy(atVersion(targets1, 2), rootKeys.slice(0, 2)))).body.error.code, 'FORBIDDEN');
  const again = await putMetadata(c.server.url, admin, '/v1/admin/trust/pending/targets', signedBy(atVersion(targets1, 2), targetsKeys.slice(1, 3)));
  assert.equal(again.body.published, true, JSON.stringify(again.body));
  const s = await status();
  assert.deepEqual([s.root.version, s.targets.version, s.targets.verifies], [3, 2, true]);
  const b = await bundle(1);
  assert.deepEqual(Object.keys(b.body.files).filter((n) => n.endsWith('.root.json')).sort(), ['2.root.json', '3.root.json']);
  const updater = updaterOver(metadataBytes(signedBy(root1, rootKeys.slice(0, 2))), filesOf(b.body));
  await updater.refresh();
  assert.ok(await updater.getTargetInfo('web/1.0.0/manifest.json'));
});

test('every change and refusal is in the audit log; a viewer may read the status but change nothing', async () => {
  assert.equal((await adminCall(c.server.url, '/v1/admin/trust')).status, 401);
  assert.equal((await putMetadata(c.server.url, viewer, '/v1/admin/trust/apps/web', Metadata.fromJSON(MetadataKind.Targets, targets1.toJSON() as never))).status, 403);
  assert.equal((await adminCall(c.server.url, '/v1/admin/trust/pending/root', { method: 'POST', token: admin, json: {} })).status, 405);
  assert.equal((await adminCall(c.server.url, '/v1/admin/trust/pending/snapshot', { method: 'PUT', token: admin, raw: Buffer.from('{}') })).status, 404);
  for (const app of ['%E0%A4%A', 'Web', 'a.b']) {
    const r = await putMetadata(c.server.url, admin, `/v1/admin/trust/apps/${app}`, targets1);
    assert.deepEqual([r.status, r.body.error.code], [400, 'USAGE'], app);
  }
  const garbage = await adminCall(c.server.url, '/v1/admin/trust/pending/targets', { method: 'PUT', token: admin, raw: Buffer.from('not json') });
  assert.deepEqual([garbage.status, garbage.body.error.code], [400, 'USAGE']);
  const wrongType = await putMetadata(c.server.url, admin, '/v1/admin/trust/pending/targets', root1);
  assert.match(wrongType.body.error.message, /of type "root", not targets/);
  const noSigs = await postSignatures(c.server.url, admin, 'root', []);
  assert.deepEqual([noSigs.status, noSigs.body.error.code], [400, 'USAGE']);
  const actions = await auditActions();
  for (const a of ['trust.online-keys', 'trust.online-keys.refused', 'trust.pending', 'trust.pending.refused', 'trust.sign', 'trust.sign.refused', 'trust.app', 'trust.app.refused', 'denied']) {
    assert.ok(actions.includes(a), `the audit log lacks ${a}: ${actions.join(', ')}`);
  }
});
