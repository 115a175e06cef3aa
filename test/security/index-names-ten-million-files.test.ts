import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { test } from 'node:test';
import { indexPath } from '../../src/control/catalog/file-index-of.js';
import { StewardError } from '../../src/core/errors.js';
import { stageRelease } from '../../src/helper/stage/stage-release.js';
import { indexedManifest, sha256 } from '../helpers/object-server.js';
import { assertNothingUntrusted, objectAttackHost } from '../helpers/object-attacks.js';
import { releaseOf } from '../helpers/object-releases.js';
import { sri } from '../helpers/host.js';

// docs/design.md §20: an index is bounded before it is fetched (the signed size is at most 64 MiB,
// so 10 million entries cannot be signed) and when it is read (at most extract.maxEntries
// entries, the archive's own cap). Either way the stage is refused and nothing is kept.
test('a manifest whose index is the size of 10 million entries is refused before anything is fetched', async (t) => {
  const { s, srv, cleanup } = await objectAttackHost();
  t.after(cleanup);
  const tgz = releaseOf('2.0.0', 'two\n');
  const manifest = indexedManifest(s, srv, '2.0.0', tgz, { integrity: sri(Buffer.from('x')), size: 10_000_000 * 100 });
  const err = await stageRelease(s.deps, { kind: 'helper', app: 'web', version: '2.0.0', manifest }).then(() => null, (e: unknown) => e);
  assert.ok(err instanceof StewardError, String(err));
  assert.equal(err.code, 'RELEASE_INVALID');
  assert.deepEqual(srv.requests, []);
  await assertNothingUntrusted(s, '2.0.0');
});

test('a signed index naming more entries than extract.maxEntries is refused UNSAFE_ARCHIVE', async (t) => {
  const { s, srv, cleanup } = await objectAttackHost({ extract: { maxEntries: 1000 } });
  t.after(cleanup);
  const tgz = releaseOf('2.0.0', 'two\n');
  await srv.publish('2.0.0', tgz);
  const sha = sha256(Buffer.from('x'));
  const entries = Array.from({ length: 1001 }, (_, i) => ({ mode: 0o444, path: `f${i}`, sha256: sha, size: 1, type: 'file' }));
  const index = Buffer.from(JSON.stringify({ entries, v: 1 }));
  writeFileSync(indexPath(srv.artifactsDir, 'web', '2.0.0'), index);
  const manifest = indexedManifest(s, srv, '2.0.0', tgz, { integrity: sri(index), size: index.length });
  const err = await stageRelease(s.deps, { kind: 'helper', app: 'web', version: '2.0.0', manifest }).then(() => null, (e: unknown) => e);
  assert.ok(err instanceof StewardError, String(err));
  assert.equal(err.code, 'UNSAFE_ARCHIVE');
  assert.match(err.message, /1001 entries, over the cap of 1000/);
  assert.ok(!srv.requests.some((r) => r.includes('.pack')));
  await assertNothingUntrusted(s, '2.0.0');
});
