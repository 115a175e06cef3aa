// An admin token is not a release key (docs/design.md §11, §12): a release uploaded through the admin
// API must be signed by a key allowed for its app, and the key sent with it must be the one
// that signed. Otherwise it is refused, nothing is stored and no bytes are left behind.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { artifactsDirOf } from '../../src/control/catalog/artifact-path.js';
import { generateKeyPair } from '../../src/platform/keys.js';
import { addOperator, adminCall, signedRelease, uploadBody } from '../helpers/admin-client.js';
import { dumpStore, startControlInProcess, type Control } from '../helpers/control-harness.js';

let c: Control;
let admin = '';
const other = generateKeyPair();
const bytes = Buffer.from('web 2.0.0, signed by a stranger');

before(async () => {
  c = await startControlInProcess({ admin: {} });
  admin = await addOperator(c.store, 'adam', 'admin');
  // The first release of web allows the harness's key for web, and only it.
  await c.addRelease('web', '1.0.0');
});
after(() => c.close());

// Every file under the artifacts folder, the uploads' temporary folder included.
const artifactFiles = () => readdirSync(artifactsDirOf(c.dbFile), { recursive: true }).map(String).sort();

async function upload(body: Buffer) {
  const before = { store: dumpStore(c.store), files: artifactFiles() };
  const r = await adminCall(c.server.url, '/v1/admin/release/add', { token: admin, raw: body });
  return { r, unchanged: () => assert.deepEqual({ store: dumpStore(c.store), files: artifactFiles() }, before, 'nothing stored, nothing audited, no bytes left') };
}

test('a release signed by a key not allowed for its app is refused 403 FORBIDDEN, changing nothing', async () => {
  const { r, unchanged } = await upload(uploadBody(signedRelease(other.privatePem, 'web', '2.0.0', bytes, c.clock.now(), c.server.url), bytes));
  assert.deepEqual([r.status, r.body.error.code], [403, 'FORBIDDEN']);
  assert.match(r.body.error.message, new RegExp(`key ${other.keyId} may not sign web`));
  unchanged();
});

test('a key allowed for another app is still refused for this one', async () => {
  const allowed = await adminCall(c.server.url, '/v1/admin/keys/allow', { token: admin, json: { app: 'api', publicKey: other.publicPem } });
  assert.equal(allowed.status, 200);
  const { r, unchanged } = await upload(uploadBody(signedRelease(other.privatePem, 'web', '2.0.0', bytes, c.clock.now(), c.server.url), bytes));
  assert.deepEqual([r.status, r.body.error.code], [403, 'FORBIDDEN']);
  unchanged();
});

test("a manifest signed by a stranger's key, sent with the allowed key's public half, is refused SIGNATURE_INVALID", async () => {
  const forged = { ...signedRelease(other.privatePem, 'web', '2.0.0', bytes, c.clock.now(), c.server.url), publicKey: c.releaseKey.publicPem };
  const { r, unchanged } = await upload(uploadBody(forged, bytes));
  assert.deepEqual([r.status, r.body.error.code], [422, 'SIGNATURE_INVALID']);
  unchanged();
});

test("a manifest signed by the allowed key but naming the stranger's key id is refused SIGNATURE_INVALID", async () => {
  const signed = signedRelease(c.releaseKey.privatePem, 'web', '2.0.0', bytes, c.clock.now(), c.server.url);
  const relabelled = { ...signed, manifest: { ...signed.manifest, keyId: other.keyId }, publicKey: other.publicPem };
  const { r, unchanged } = await upload(uploadBody(relabelled, bytes));
  assert.deepEqual([r.status, r.body.error.code], [422, 'SIGNATURE_INVALID']);
  unchanged();
});

test('once an admin allows the key for the app, the same upload is taken and audited', async () => {
  assert.equal((await adminCall(c.server.url, '/v1/admin/keys/allow', { token: admin, json: { app: 'web', publicKey: other.publicPem } })).status, 200);
  const r = await adminCall(c.server.url, '/v1/admin/release/add', { token: admin, raw: uploadBody(signedRelease(other.privatePem, 'web', '2.0.0', bytes, c.clock.now(), c.server.url), bytes) });
  assert.deepEqual([r.status, r.body.change, r.body.keyId], [200, 'added', other.keyId]);
  const last = (dumpStore(c.store).audit as Array<{ operator: string; action: string; target: string }>).at(-1);
  assert.deepEqual([last?.operator, last?.action, last?.target], ['adam', 'release.add', 'web@2.0.0']);
});
