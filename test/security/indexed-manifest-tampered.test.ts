import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { test } from 'node:test';
import { stagingDir, versionDir } from '../../src/core/paths.js';
import { StewardError } from '../../src/core/errors.js';
import type { Envelope } from '../../src/core/release-schemas.js';
import { stageRelease } from '../../src/helper/stage/stage-release.js';
import { hostWithCurrent, type StagedHost } from '../helpers/stage-harness.js';
import { makeReleaseKey, manifestFor } from '../helpers/host.js';
import { keyOf, startObjectServer, type ObjectServer } from '../helpers/object-server.js';
import { releaseOf } from '../helpers/object-releases.js';

// docs/design.md §20.2: the indexed manifest that comes beside a release's plain manifest is
// verified exactly as the plain one is (trusted keys, signature, app, version, expiry) and must name
// the same bytes (url, size, integrity) with an index. One that fails any check refuses the whole
// request, saying which check failed; nothing is staged from either manifest, and nothing is
// left in the staging folder.

interface Pair {
  s: StagedHost;
  srv: ObjectServer;
  tgz: Buffer;
  plain: Record<string, unknown>;
  index: { url: string; integrity: string; size: number };
}

// A host that has web 1.0.0 staged, and web 1.1.0 published with its index: the plain payload of
// 1.1.0 and its index, for the test to sign as it likes.
async function pair(t: { after(fn: () => void): void }): Promise<Pair> {
  const srv = await startObjectServer();
  const s = await hostWithCurrent();
  t.after(() => {
    srv.close();
    s.host.cleanup();
  });
  const v1 = releaseOf('1.0.0', 'one\n');
  await srv.publish('1.0.0', v1);
  const at1 = `${srv.base}/v1/artifacts/web/1.0.0`;
  await stageRelease(s.deps, { kind: 'helper', app: 'web', version: '1.0.0', manifest: keyOf(s).sign(manifestFor('web', '1.0.0', v1, { url: `${at1}.tgz` })) });
  const tgz = releaseOf('1.1.0', 'two\n');
  const idx = await srv.publish('1.1.0', tgz);
  const at = `${srv.base}/v1/artifacts/web/1.1.0`;
  const plain = manifestFor('web', '1.1.0', tgz, { url: `${at}.tgz` });
  return { s, srv, tgz, plain, index: { url: `${at}.index.json`, ...idx } };
}

async function refused(p: Pair, indexedManifest: Envelope, code: string, message: RegExp): Promise<void> {
  const err = await stageRelease(p.s.deps, { kind: 'helper', app: 'web', version: '1.1.0', manifest: keyOf(p.s).sign(p.plain), indexedManifest }).then(
    () => null,
    (e: unknown) => e,
  );
  assert.ok(err instanceof StewardError, 'the request was refused');
  assert.equal(err.code, code, err.message);
  assert.match(err.message, /the indexed manifest of web 1\.1\.0/);
  assert.match(err.message, message);
  assert.equal(existsSync(versionDir(p.s.host.paths, 'web', '1.1.0')), false, 'nothing was staged, not even from the plain manifest');
  assert.deepEqual(readdirSync(stagingDir(p.s.host.paths, 'web')), []);
  assert.equal(p.srv.requests.filter((r) => r.includes('1.1.0')).length, 0, 'nothing of 1.1.0 was fetched');
}

test('a good indexed manifest beside the plain one is staged from: the index path is taken', async (t) => {
  const p = await pair(t);
  const r = await stageRelease(p.s.deps, { kind: 'helper', app: 'web', version: '1.1.0', manifest: keyOf(p.s).sign(p.plain), indexedManifest: keyOf(p.s).sign({ ...p.plain, index: p.index }) });
  assert.equal(r.via, 'objects', JSON.stringify(r.fallback));
  // The plain manifest alone: the tarball, as a host that reads no index takes it.
  const q = await pair(t);
  const plainOnly = await stageRelease(q.s.deps, { kind: 'helper', app: 'web', version: '1.1.0', manifest: keyOf(q.s).sign(q.plain) });
  assert.equal(plainOnly.via, 'tarball');
});

test('an indexed manifest naming other bytes (integrity, size or url) is refused INTEGRITY_MISMATCH', async (t) => {
  const p = await pair(t);
  const other = manifestFor('web', '1.1.0', releaseOf('1.1.0', 'evil\n'));
  await refused(p, keyOf(p.s).sign({ ...p.plain, integrity: other.integrity, index: p.index }), 'INTEGRITY_MISMATCH', /other bytes/);
  await refused(p, keyOf(p.s).sign({ ...p.plain, size: (p.plain.size as number) + 1, index: p.index }), 'INTEGRITY_MISMATCH', /other bytes/);
  await refused(p, keyOf(p.s).sign({ ...p.plain, url: 'https://evil.invalid/web-1.1.0.tgz', index: p.index }), 'INTEGRITY_MISMATCH', /other bytes/);
});

test('an indexed manifest of another app or version is refused RELEASE_INVALID', async (t) => {
  const p = await pair(t);
  await refused(p, keyOf(p.s).sign({ ...p.plain, version: '1.0.0', index: p.index }), 'RELEASE_INVALID', /not 1\.1\.0/);
  await refused(p, keyOf(p.s).sign({ ...p.plain, name: 'api', index: p.index }), 'RELEASE_INVALID', /app api, not web/);
});

test('an indexed manifest with a bad signature, or signed by a key not trusted for the app, is refused SIGNATURE_INVALID', async (t) => {
  const p = await pair(t);
  const good = keyOf(p.s).sign({ ...p.plain, index: p.index });
  const sig = Buffer.from(good.sig, 'base64');
  sig[0] = (sig[0] as number) ^ 1;
  await refused(p, { ...good, sig: sig.toString('base64') }, 'SIGNATURE_INVALID', /does not verify/);
  // The payload changed under the signature: an index of the attacker's.
  const payload = JSON.parse(Buffer.from(good.payload, 'base64').toString());
  payload.index.integrity = payload.integrity;
  await refused(p, { ...good, payload: Buffer.from(JSON.stringify(payload)).toString('base64') }, 'SIGNATURE_INVALID', /does not verify/);
  await refused(p, makeReleaseKey().sign({ ...p.plain, index: p.index }), 'SIGNATURE_INVALID', /not trusted for app web/);
});

test('an expired indexed manifest, or one with no index, is refused', async (t) => {
  const p = await pair(t);
  await refused(p, keyOf(p.s).sign({ ...p.plain, expires: Date.now() - 1000, index: p.index }), 'MANIFEST_EXPIRED', /expired at/);
  await refused(p, keyOf(p.s).sign(p.plain), 'RELEASE_INVALID', /names no file index/);
});

test('an indexed manifest without a plain manifest is refused BAD_REQUEST', async (t) => {
  const p = await pair(t);
  const err = await stageRelease(p.s.deps, { kind: 'admin', app: 'web', version: '1.1.0', indexedManifest: keyOf(p.s).sign({ ...p.plain, index: p.index }), allowUnsigned: true, integrity: p.plain.integrity as string, path: '/nonexistent.tgz' }).then(
    () => null,
    (e: unknown) => e,
  );
  assert.ok(err instanceof StewardError);
  assert.equal(err.code, 'BAD_REQUEST', err.message);
});
