import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { acceptEncoding, decompressSync, hasZstd } from '../../../src/core/compression.js';
import { PACK_TRIES } from '../../../src/helper/stage/stage-from-index.js';
import { assertNothingUntrusted, objectAttackHost } from '../../helpers/object-attacks.js';
import { assertTreeAsTarballGives, stageIndexed } from '../../helpers/object-server.js';
import { hostWithCurrent } from '../../helpers/stage-harness.js';
import { gzipTar, makeReleaseTar } from '../../fixtures/tar-writer.js';

// docs/design.md §20.5: a pack is made per request, so it resumes by object: an answer cut
// midway keeps the objects that came whole and verified, and a second POST asks only for the
// rest (at most PACK_TRIES POSTs, then the tarball). And the pack and index come zstd where the
// helper's runtime reads it, gzip otherwise.
const SHARED = Array.from({ length: 60 }, (_, i) => ({ path: `lib/s${i}.js`, content: randomBytes(3072).toString('base64') }));

function release(version: string, fresh: number): Buffer {
  const mine = Array.from({ length: fresh }, (_, i) => ({ path: `lib/${version}-${i}.js`, content: randomBytes(3072).toString('base64') }));
  return gzipTar(makeReleaseTar('web', version, [{ path: 'lib/', type: 'dir' }, ...SHARED, ...mine]));
}

test('a pack cut midway is resumed by object: the second POST asks only for what did not come whole, and the tree is the tarball\'s', async (t) => {
  const { s, srv, cleanup } = await objectAttackHost();
  const peer = await hostWithCurrent();
  t.after(() => {
    cleanup();
    peer.host.cleanup();
  });
  await stageIndexed(s, srv, '1.0.0', release('1.0.0', 0));
  const v2 = release('1.1.0', 20);
  srv.cut.pack = [0.5];
  const r = await stageIndexed(s, srv, '1.1.0', v2);
  assert.equal(r.via, 'objects', JSON.stringify(r.fallback));
  assert.equal(srv.packAsks.length, 2, 'two pack requests');
  const [first, second] = srv.packAsks as [number, number];
  assert.ok(second < first && second > 0, `the second asked ${second} of the first's ${first}`);
  assert.ok(!srv.requests.some((q) => q.includes('1.1.0.tgz')), 'the tarball was never fetched');
  // The same tarball staged the old way on another host: the same walk.
  await assertTreeAsTarballGives(s, r, peer, '1.1.0', v2);
  await assertNothingUntrusted(s);
});

test(`a pack cut at every try is asked for at most ${PACK_TRIES} times, then the tarball is staged, nothing untrusted left`, async (t) => {
  const { s, srv, cleanup } = await objectAttackHost();
  t.after(cleanup);
  await stageIndexed(s, srv, '1.0.0', release('1.0.0', 0));
  srv.cut.pack = Array.from({ length: PACK_TRIES + 2 }, () => 0.5);
  const r = await stageIndexed(s, srv, '1.1.0', release('1.1.0', 20));
  assert.equal(r.via, 'tarball');
  assert.ok(r.fallback?.code === 'FETCH_FAILED' || r.fallback?.code === 'INTEGRITY_MISMATCH', JSON.stringify(r.fallback));
  assert.equal(srv.packAsks.length, PACK_TRIES);
  await assertNothingUntrusted(s);
});

test('a pack cut before its first whole object is not asked again: the tarball is staged', async (t) => {
  const { s, srv, cleanup } = await objectAttackHost();
  t.after(cleanup);
  await stageIndexed(s, srv, '1.0.0', release('1.0.0', 0));
  srv.cut.pack = [10];
  const r = await stageIndexed(s, srv, '1.1.0', release('1.1.0', 20));
  assert.equal(r.via, 'tarball');
  assert.equal(srv.packAsks.length, 1);
  await assertNothingUntrusted(s);
});

test(`the helper asks for the index and pack with Accept-Encoding "${acceptEncoding()}" and reads the ${hasZstd() ? 'zstd' : 'gzip'} answer`, async (t) => {
  const { s, srv, cleanup } = await objectAttackHost();
  t.after(cleanup);
  await stageIndexed(s, srv, '1.0.0', release('1.0.0', 0));
  const at = srv.requests.length;
  const r = await stageIndexed(s, srv, '1.1.0', release('1.1.0', 5));
  assert.equal(r.via, 'objects', JSON.stringify(r.fallback));
  // The index and the pack (patches, offered by no one here, are asked for on Node 22.15+ first).
  const asked = srv.requests
    .map((q, i) => [q, srv.accepts[i], srv.answered[i]])
    .slice(at)
    .filter(([q]) => q?.endsWith('.index.json') || q?.endsWith('.pack'));
  const want = hasZstd() ? ['zstd, gzip', 'application/zstd'] : ['gzip', 'application/gzip'];
  assert.deepEqual(asked, [
    ['GET /v1/artifacts/web/1.1.0.index.json', ...want],
    ['POST /v1/artifacts/web/1.1.0.pack', ...want],
  ]);
});

// A zstd frame of `bytes` written by hand (raw blocks of at most 128 KiB, no checksum), so that
// a runtime without zstd can make one.
function zstdFrameOf(bytes: Buffer): Buffer {
  const parts: Buffer[] = [Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x00, 17 << 3])];
  for (let at = 0; at < bytes.length || at === 0; at += 128 * 1024) {
    const block = bytes.subarray(at, at + 128 * 1024);
    const head = Buffer.alloc(3);
    head.writeUIntLE((block.length << 3) | (at + 128 * 1024 >= bytes.length ? 1 : 0), 0, 3);
    parts.push(head, block);
    if (bytes.length === 0) break;
  }
  return Buffer.concat(parts);
}

test(`a pack answered in zstd is ${hasZstd() ? 'read' : 'refused UNSUPPORTED_COMPRESSION (this runtime has no zstd) and the tarball staged'}`, async (t) => {
  const { s, srv, cleanup } = await objectAttackHost();
  t.after(cleanup);
  await stageIndexed(s, srv, '1.0.0', release('1.0.0', 0));
  srv.wire.pack = (body) => zstdFrameOf(decompressSync(body, 1 << 30, 'the pack'));
  const r = await stageIndexed(s, srv, '1.1.0', release('1.1.0', 5));
  if (hasZstd()) assert.equal(r.via, 'objects', JSON.stringify(r.fallback));
  else {
    assert.equal(r.via, 'tarball');
    assert.equal(r.fallback?.code, 'UNSUPPORTED_COMPRESSION');
    assert.match(r.fallback?.message ?? '', /has no zstd/);
  }
  await assertNothingUntrusted(s);
});

test('a pack answered in neither gzip nor zstd is refused INTEGRITY_MISMATCH and the tarball staged', async (t) => {
  const { s, srv, cleanup } = await objectAttackHost();
  t.after(cleanup);
  await stageIndexed(s, srv, '1.0.0', release('1.0.0', 0));
  srv.wire.pack = (body) => Buffer.concat([Buffer.from('BZh9'), body]);
  const r = await stageIndexed(s, srv, '1.1.0', release('1.1.0', 5));
  assert.equal(r.via, 'tarball');
  assert.equal(r.fallback?.code, 'INTEGRITY_MISMATCH');
  assert.match(r.fallback?.message ?? '', /neither gzip nor zstd/);
  await assertNothingUntrusted(s);
});
