import assert from 'node:assert/strict';
import { test } from 'node:test';
import { StewardError } from '../../src/core/errors.js';
import { stageRelease } from '../../src/helper/stage/stage-release.js';
import { indexedManifest, keyOf, stageIndexed } from '../helpers/object-server.js';
import { assertNothingUntrusted, objectAttackHost } from '../helpers/object-attacks.js';
import { releaseOf } from '../helpers/object-releases.js';
import { manifestFor } from '../helpers/host.js';

// docs/design.md §20: every object a helper links is covered by the release key's signature through
// the index's integrity in the manifest. An index the server (or the wire) changed does not
// match it: the objects path is refused (INTEGRITY_MISMATCH) and the signed tarball is staged.
test('an index that is not the one the manifest signs is refused, and the tarball is staged instead', async (t) => {
  const { s, srv, cleanup } = await objectAttackHost();
  t.after(cleanup);
  await stageIndexed(s, srv, '1.0.0', releaseOf('1.0.0', 'one\n'));
  // The same length, one file made executable (0444 to 0555): only the integrity tells.
  srv.tamper.index = (body) => Buffer.from(body.toString().replace('"mode":292', '"mode":365'));
  const r = await stageIndexed(s, srv, '1.1.0', releaseOf('1.1.0', 'two\n'));
  assert.equal(r.via, 'tarball');
  assert.equal(r.fallback?.code, 'INTEGRITY_MISMATCH');
  assert.match(r.fallback?.message ?? '', /does not match the integrity the manifest signs/);
  assert.ok(!srv.requests.some((q) => q.includes('1.1.0.pack')), 'no pack was asked for on an index that does not verify');
  await assertNothingUntrusted(s);
});

test('a manifest whose index was added after it was signed is refused SIGNATURE_INVALID', async (t) => {
  const { s, srv, cleanup } = await objectAttackHost();
  t.after(cleanup);
  const tgz = releaseOf('2.0.0', 'two\n');
  const index = await srv.publish('2.0.0', tgz);
  const signed = keyOf(s).sign(manifestFor('web', '2.0.0', tgz, { url: `${srv.base}/v1/artifacts/web/2.0.0.tgz` }));
  const withIndex = JSON.parse(Buffer.from(indexedManifest(s, srv, '2.0.0', tgz, index).payload, 'base64').toString()) as unknown;
  const forged = { ...signed, payload: Buffer.from(JSON.stringify(withIndex)).toString('base64') };
  const err = await stageRelease(s.deps, { kind: 'helper', app: 'web', version: '2.0.0', manifest: forged }).then(() => null, (e: unknown) => e);
  assert.ok(err instanceof StewardError, String(err));
  assert.equal(err.code, 'SIGNATURE_INVALID');
  assert.deepEqual(srv.requests, [], 'nothing was fetched');
  await assertNothingUntrusted(s, '2.0.0');
});
