import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { test } from 'node:test';
import zlib from 'node:zlib';
import { hasZstd } from '../../src/core/compression.js';
import { StewardError } from '../../src/core/errors.js';
import { extractArchive, prepareExtraction } from '../../src/platform/tarball.js';
import { DEFAULT_LIMITS, expectExtracts, listDest, makeSandbox, removeSandbox } from '../fixtures/extract-sandbox.js';
import { gzipTar, makeReleaseTar } from '../fixtures/tar-writer.js';

// docs/design.md §20.5: the operator's tarball stays as given; a host takes a zstd one where its
// runtime has zstd (Node 22.15 and later), and refuses it with UNSUPPORTED_COMPRESSION where not.
const zstdCompressSync = (zlib as unknown as { zstdCompressSync?: (b: Buffer) => Buffer }).zstdCompressSync;
const HAS = hasZstd();
const entries = [
  { path: 'server.js', content: 'console.log("hi")\n' },
  { path: 'bin/run', content: '#!/bin/sh\n', mode: 0o755 },
  { path: 'lib/a.txt', content: 'a'.repeat(10_000) },
];

// A zstd frame, made here by zstd where the runtime has it, else a real one written down (a
// tar of one file, compressed by zstd 1.5): the refusal reads only the magic.
function zstdTar(tar: Buffer): Buffer {
  if (zstdCompressSync) return zstdCompressSync(tar);
  return Buffer.concat([Buffer.from([0x28, 0xb5, 0x2f, 0xfd]), Buffer.alloc(64, 0)]);
}

test('a zstd tarball extracts to the same tree as its gzip twin, from a file, from memory and streamed', { skip: HAS ? false : `this runtime (Node ${process.versions.node}) has no zstd; the refusal is tested below` }, async (t) => {
  const tar = makeReleaseTar('web', '1.0.0', entries);
  const a = await makeSandbox();
  const b = await makeSandbox();
  const c = await makeSandbox();
  const d = await makeSandbox();
  t.after(async () => {
    for (const sb of [a, b, c, d]) await removeSandbox(sb);
  });
  const viaGzip = await expectExtracts(a, gzipTar(tar));
  const viaZstd = await expectExtracts(b, zstdTar(tar));
  assert.equal(viaZstd.treeDigest, viaGzip.treeDigest);
  const walk = async (sb: typeof a) => (await listDest(sb)).map((e) => [e.rel, e.st.mode, e.st.size]);
  assert.deepEqual(await walk(b), await walk(a));
  const fromMemory = await extractArchive({ archive: zstdTar(tar), dest: c.dest, limits: DEFAULT_LIMITS });
  assert.equal(fromMemory.treeDigest, viaGzip.treeDigest);
  // Streamed in 3-byte chunks first: the magic is read across chunks.
  const z = zstdTar(tar);
  const job = prepareExtraction().extractStream({ dest: d.dest, limits: DEFAULT_LIMITS, what: 'the stream', size: z.length });
  await job.write(z.subarray(0, 3));
  await job.write(z.subarray(3));
  job.end();
  assert.equal((await job.result).treeDigest, viaGzip.treeDigest);
});

test('a zstd tarball on a runtime without zstd is refused UNSUPPORTED_COMPRESSION, saying the runtime lacks zstd, leaving no tree', { skip: HAS ? `this runtime (Node ${process.versions.node}) has zstd; the extraction is tested above` : false }, async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  const z = zstdTar(makeReleaseTar('web', '1.0.0', entries));
  for (const run of [() => extractArchive({ archive: Buffer.from(z), dest: sb.dest, limits: DEFAULT_LIMITS }), () => expectExtracts(sb, z)]) {
    await assert.rejects(run(), (err: unknown) => {
      assert.ok(err instanceof StewardError, String(err));
      assert.equal(err.code, 'UNSUPPORTED_COMPRESSION');
      assert.match(err.message, /zstd-compressed and this runtime \(Node [0-9.]+\) has no zstd/);
      return true;
    });
  }
  assert.deepEqual(readdirSync(sb.dest.replace(/\/tree$/, '')), [], 'no tree is left');
});

test('bytes that are neither gzip nor zstd are still refused UNSAFE_ARCHIVE', async (t) => {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  await assert.rejects(extractArchive({ archive: Buffer.from('PK\x03\x04 a zip'), dest: sb.dest, limits: DEFAULT_LIMITS }), (err: unknown) => {
    assert.ok(err instanceof StewardError);
    assert.equal(err.code, 'UNSAFE_ARCHIVE');
    assert.match(err.message, /not a gzip file .* nor a zstd one/);
    return true;
  });
});
