import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { hasZstd } from '../../../src/core/compression.js';
import { objectsDir } from '../../../src/core/paths.js';
import { adoptVerifiedFileSync, INDEXES_DIR, objectName, objectPath } from '../../../src/platform/object-store.js';
import { removeRelease } from '../../../src/helper/release-store.js';
import { collectKeptIndexes } from '../../../src/helper/stage/kept-indexes.js';
import { indexOfStagedTree } from '../../../src/helper/stage/staged-index.js';
import { assertNothingUntrusted, objectAttackHost } from '../../helpers/object-attacks.js';
import { assertTreeAsTarballGives, sha256, stageIndexed } from '../../helpers/object-server.js';
import { hostWithCurrent } from '../../helpers/stage-harness.js';
import { patchRelease } from '../../helpers/patch-releases.js';
import { gzipTar, makeReleaseTar } from '../../fixtures/tar-writer.js';

// docs/design.md §20.5: a static zstd patch from a version the host has brings the objects it
// lacks; its tree is the tarball's. Made and taken only where the runtime has zstd.
const NO_ZSTD = hasZstd() ? false : `this runtime (Node ${process.versions.node}) has no zstd: no patch is made or taken (the pack path is tested below)`;
test('a release staged from a static patch fetches the patch and no pack, and its tree is the tarball\'s, byte for byte and mode for mode', { skip: NO_ZSTD }, async (t) => {
  const { s, srv, cleanup } = await objectAttackHost();
  srv.offerPatches = true;
  const peer = await hostWithCurrent();
  t.after(() => {
    cleanup();
    peer.host.cleanup();
  });
  await stageIndexed(s, srv, '1.0.0', patchRelease('1.0.0'));
  const v2 = patchRelease('1.1.0');
  const at = srv.requests.length;
  const before = { ...srv.moved };
  const r = await stageIndexed(s, srv, '1.1.0', v2);
  assert.deepEqual(srv.patches?.from, ['1.0.0']);
  assert.equal(r.via, 'objects', JSON.stringify(r.fallback));
  assert.deepEqual(r.patch, { from: '1.0.0', used: true });
  const asked = srv.requests.slice(at);
  assert.ok(asked.includes('GET /v1/artifacts/web/1.1.0.from-1.0.0.patch'), asked.join('\n'));
  assert.ok(asked.includes('GET /v1/artifacts/web/1.1.0.index.json.from-1.0.0.zst'), 'the index came as a delta from 1.0.0\'s');
  assert.ok(!asked.includes('GET /v1/artifacts/web/1.1.0.index.json'), 'the full index was never fetched');
  assert.ok(!asked.some((q) => q.includes('.pack') || q.includes('.tgz')), asked.join('\n'));
  const moved = srv.moved.patch - before.patch + (srv.moved.delta - before.delta) + (srv.moved.index - before.index);
  assert.equal(r.fetchedBytes, moved, 'fetchedBytes is what went over the wire');
  assert.ok(moved < v2.length / 20, `the patch and index delta moved ${moved} bytes of a ${v2.length}-byte tarball`);
  await assertTreeAsTarballGives(s, r, peer, '1.1.0', v2);
  await assertNothingUntrusted(s);
});

test('an object of the patch the host already has is decoded, checked and dropped: the host\'s object stays as it was', { skip: NO_ZSTD }, async (t) => {
  const { s, srv, cleanup } = await objectAttackHost();
  srv.offerPatches = true;
  t.after(cleanup);
  await stageIndexed(s, srv, '1.0.0', patchRelease('1.0.0'));
  // The one new file of 1.1.0, put in objects/ as a stage would have (a verified object).
  const bytes = Buffer.from('x("1.1.0")\n');
  const objects = objectsDir(s.host.paths, 'web');
  const tmp = path.join(objects, '.tmp-test');
  writeFileSync(tmp, bytes, { mode: 0o444 });
  const name = objectName(sha256(bytes), 0o444);
  adoptVerifiedFileSync(objects, tmp, name);
  const before = statSync(objectPath(objects, name));
  const r = await stageIndexed(s, srv, '1.1.0', patchRelease('1.1.0'));
  assert.deepEqual(r.patch, { from: '1.0.0', used: true }, JSON.stringify(r.patch));
  const header = readFileSync(path.join(srv.artifactsDir, 'web', '1.1.0.from-1.0.0.patch'));
  assert.ok(header.includes(Buffer.from(sha256(bytes))), 'the patch holds the object the host had');
  const after = statSync(objectPath(objects, name));
  assert.equal(after.ino, before.ino, 'the host\'s object was not written again');
  await assertNothingUntrusted(s);
});

test('an index delta that decodes to another index is not used: the full index is fetched and the stage goes on', { skip: NO_ZSTD }, async (t) => {
  const { s, srv, cleanup } = await objectAttackHost();
  srv.offerPatches = true;
  t.after(cleanup);
  await stageIndexed(s, srv, '1.0.0', patchRelease('1.0.0'));
  srv.tamper.delta = (body) => Buffer.concat([body.subarray(0, body.length - 8), Buffer.alloc(8, 0x55)]);
  const at = srv.requests.length;
  const r = await stageIndexed(s, srv, '1.1.0', patchRelease('1.1.0'));
  assert.equal(r.via, 'objects', JSON.stringify(r.fallback));
  const asked = srv.requests.slice(at);
  assert.ok(asked.includes('GET /v1/artifacts/web/1.1.0.index.json.from-1.0.0.zst'));
  assert.ok(asked.includes('GET /v1/artifacts/web/1.1.0.index.json'), 'the full index was fetched after the delta failed');
  await assertNothingUntrusted(s);
});

// docs/design.md §20.5: each staged version's index is kept beside the objects, named by its tree
// digest, and the next index delta decodes against it rather than walking that version's tree.
// A cache, never a trust: a kept index that is wrong costs the full index, never the stage.
test('the index delta decodes against the kept index of the version it comes from; a wrong one costs the full index only', { skip: NO_ZSTD }, async (t) => {
  const { s, srv, cleanup } = await objectAttackHost();
  srv.offerPatches = true;
  t.after(cleanup);
  const objects = objectsDir(s.host.paths, 'web');
  const first = await stageIndexed(s, srv, '1.0.0', patchRelease('1.0.0'));
  const kept = path.join(objects, INDEXES_DIR, `${sha256(Buffer.from(first.treeDigest))}.json`);
  const tree = path.join(s.host.paths.appsDir, 'web', 'versions', '1.0.0');
  assert.deepEqual(readFileSync(kept), indexOfStagedTree(tree, objects), 'the kept index is the one the tree gives');
  // The tree alone no longer gives its index (an object of it is gone): only the kept one can.
  const ino = statSync(path.join(tree, 'lib', 'new-1.0.0.js')).ino;
  for (const shard of readdirSync(objects).filter((n) => /^[0-9a-f]{2}$/.test(n))) {
    for (const n of readdirSync(path.join(objects, shard))) if (statSync(path.join(objects, shard, n)).ino === ino) unlinkSync(path.join(objects, shard, n));
  }
  assert.equal(indexOfStagedTree(tree, objects), null);
  let at = srv.requests.length;
  const r = await stageIndexed(s, srv, '1.1.0', patchRelease('1.1.0'));
  assert.equal(r.via, 'objects', JSON.stringify(r.fallback));
  let asked = srv.requests.slice(at);
  assert.ok(asked.includes('GET /v1/artifacts/web/1.1.0.index.json.from-1.0.0.zst'));
  assert.ok(!asked.includes('GET /v1/artifacts/web/1.1.0.index.json'), `the delta decoded against the kept index: ${asked.join(', ')}`);
  // A kept index that is not the tree's: the delta fails its integrity, the full index is fetched.
  const second = path.join(objects, INDEXES_DIR, `${sha256(Buffer.from(r.treeDigest))}.json`);
  writeFileSync(second, '{"entries":[],"v":1}');
  at = srv.requests.length;
  const r2 = await stageIndexed(s, srv, '1.2.0', patchRelease('1.2.0'));
  assert.equal(r2.via, 'objects', JSON.stringify(r2.fallback));
  asked = srv.requests.slice(at);
  assert.ok(asked.includes('GET /v1/artifacts/web/1.2.0.index.json'), `the full index was fetched: ${asked.join(', ')}`);
  const peer = await hostWithCurrent();
  t.after(() => peer.host.cleanup());
  await assertTreeAsTarballGives(s, r2, peer, '1.2.0', patchRelease('1.2.0'));
  await assertNothingUntrusted(s);
  // Collected with the versions: the kept index of a version removed goes, the others stay.
  await removeRelease(s.host.paths, 'web', '1.0.0');
  writeFileSync(path.join(objects, INDEXES_DIR, '.tmp-left'), 'x');
  assert.equal(await collectKeptIndexes(s.host.paths, 'web'), 2);
  const left = readdirSync(path.join(objects, INDEXES_DIR));
  assert.ok(!left.includes(path.basename(kept)) && !left.includes('.tmp-left'), left.join(', '));
  for (const v of [r, r2]) assert.ok(left.includes(`${sha256(Buffer.from(v.treeDigest))}.json`), `${v.version}'s kept index stays`);
});

test('a patch cut midway is resumed with Range from where it stopped', { skip: NO_ZSTD }, async (t) => {
  const { s, srv, cleanup } = await objectAttackHost();
  srv.offerPatches = true;
  t.after(cleanup);
  await stageIndexed(s, srv, '1.0.0', patchRelease('1.0.0'));
  srv.cut.patch = [0.5];
  const at = srv.requests.length;
  const r = await stageIndexed(s, srv, '1.1.0', patchRelease('1.1.0'));
  assert.deepEqual(r.patch, { from: '1.0.0', used: true }, JSON.stringify(r.patch));
  const asked = srv.requests.slice(at);
  assert.equal(asked.filter((q) => q.endsWith('1.1.0.from-1.0.0.patch')).length, 2, asked.join('\n'));
  assert.ok(!asked.some((q) => q.includes('.pack')));
  await assertNothingUntrusted(s);
});

test('the catalog makes patches from exactly the 2 newest earlier indexed versions', { skip: NO_ZSTD }, async (t) => {
  const { s, srv, cleanup } = await objectAttackHost();
  srv.offerPatches = true;
  t.after(cleanup);
  for (const v of ['1.0.0', '1.1.0', '1.2.0']) await srv.publish(v, patchRelease(v));
  await srv.publish('1.3.0', patchRelease('1.3.0'));
  assert.deepEqual(srv.patches, { from: ['1.2.0', '1.1.0'], notes: [] });
  const dir = path.join(srv.artifactsDir, 'web');
  assert.ok(existsSync(path.join(dir, '1.3.0.from-1.2.0.patch')));
  assert.ok(existsSync(path.join(dir, '1.3.0.from-1.1.0.patch')));
  assert.ok(!existsSync(path.join(dir, '1.3.0.from-1.0.0.patch')));
  void s;
});

test('on a runtime without zstd the catalog makes no patch, says why, and a stage takes the pack', { skip: hasZstd() ? `this runtime (Node ${process.versions.node}) has zstd: patches are tested above` : false }, async (t) => {
  const { s, srv, cleanup } = await objectAttackHost();
  srv.offerPatches = true;
  t.after(cleanup);
  await stageIndexed(s, srv, '1.0.0', patchRelease('1.0.0'));
  const r = await stageIndexed(s, srv, '1.1.0', patchRelease('1.1.0'));
  assert.equal(srv.patches?.from.length, 0);
  assert.match(srv.patches?.notes[0] ?? '', /has no zstd/);
  assert.equal(r.via, 'objects');
  assert.equal(r.patch, undefined, 'no patch was tried');
  assert.ok(!srv.requests.some((q) => q.endsWith('.patch')));
  assert.ok(srv.requests.some((q) => q.startsWith('POST') && q.endsWith('1.1.0.pack')));
  await assertNothingUntrusted(s);
});

// A release whose every file changed a little (a major release, a rebuild that stamps each file)
// has more than half its bytes missing: the pack would be most of the tarball, but a patch, whose
// bytes are the difference from a version the host has, is taken when it is under half of it.
const WHOLE = Array.from({ length: 30 }, () => randomBytes(4096).toString('base64'));
const stamped = (version: string, fresh = false) =>
  gzipTar(makeReleaseTar('web', version, [{ path: 'lib/', type: 'dir' }, ...WHOLE.map((c, i) => ({ path: `lib/f${i}.js`, content: fresh ? randomBytes(4096).toString('base64') : `// ${version}\n${c}` }))]));

test('a release with every file changed takes a patch under half its tarball, and the tarball when the patch is not', { skip: NO_ZSTD }, async (t) => {
  const { s, srv, cleanup } = await objectAttackHost();
  srv.offerPatches = true;
  t.after(cleanup);
  await stageIndexed(s, srv, '1.0.0', stamped('1.0.0'));
  const v2 = stamped('2.0.0');
  const r = await stageIndexed(s, srv, '2.0.0', v2);
  assert.equal(r.via, 'objects', JSON.stringify(r));
  assert.deepEqual(r.patch, { from: '1.0.0', used: true });
  assert.ok((r.fetchedBytes ?? Infinity) < v2.length / 2, `moved ${r.fetchedBytes} of a ${v2.length}-byte tarball`);
  await assertNothingUntrusted(s);

  // New bytes everywhere: its patch is the size of its files, over half the tarball: not taken
  // (its download stops at half), the tarball is, and fetchedBytes counts both.
  const v3 = stamped('3.0.0', true);
  const before = { ...srv.moved };
  const r3 = await stageIndexed(s, srv, '3.0.0', v3);
  assert.equal(r3.via, 'tarball');
  assert.equal(r3.fallback?.code, null, JSON.stringify(r3.fallback));
  assert.match(r3.fallback?.message ?? '', /more than half .* no patch under half of it was taken/);
  assert.equal(r3.patch?.used, false, JSON.stringify(r3.patch));
  const moved = srv.moved.patch - before.patch + (srv.moved.delta - before.delta) + (srv.moved.index - before.index) + (srv.moved.tgz - before.tgz);
  assert.ok((r3.fetchedBytes ?? 0) >= v3.length && (r3.fetchedBytes ?? 0) <= moved, `fetchedBytes ${r3.fetchedBytes}, tarball ${v3.length}, moved ${moved}`);
  await assertNothingUntrusted(s);
});

test('without a patch offered, a release with every file changed takes the tarball, as any release mostly missing', async (t) => {
  const { s, srv, cleanup } = await objectAttackHost();
  t.after(cleanup);
  await stageIndexed(s, srv, '1.0.0', stamped('1.0.0'));
  const r = await stageIndexed(s, srv, '2.0.0', stamped('2.0.0'));
  assert.equal(r.via, 'tarball');
  assert.match(r.fallback?.message ?? '', /more than half/);
  // On a runtime with zstd the patch was asked for (404); without, never.
  assert.notEqual(r.patch?.used, true);
  if (!hasZstd()) assert.equal(r.patch, undefined);
});
