// The writer under the extraction (src/platform/tar-tree-writer.ts), fed through UnpackFeed
// in-process so that a test can plant things in dest first: what no well-formed archive can
// make, but what the writer must still never write through or over.
import assert from 'node:assert/strict';
import { promises as fsp, readdirSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { StewardError } from '../../src/core/errors.js';
import { UnpackFeed } from '../../src/platform/tar-unpack-feed.js';
import { DEFAULT_LIMITS, makeSandbox, removeSandbox, snapshotOutsideDest, type Sandbox } from '../fixtures/extract-sandbox.js';
import { makeTar } from '../fixtures/tar-writer.js';

// Feeds `tar` (not gzipped) in 1000-byte pieces, as the worker feeds gunzipped chunks.
function unpack(sb: Sandbox, tar: Buffer): void {
  const feed = new UnpackFeed(sb.dest, DEFAULT_LIMITS, tar.length);
  for (let off = 0; off < tar.length; off += 1000) feed.feed(tar.subarray(off, off + 1000));
  feed.finish();
}

async function withDest(t: import('node:test').TestContext): Promise<Sandbox> {
  const sb = await makeSandbox();
  t.after(() => removeSandbox(sb));
  await fsp.mkdir(sb.dest, { mode: 0o700 });
  return sb;
}

test('a file is never opened through a symlink already at its path', async (t) => {
  const sb = await withDest(t);
  await fsp.symlink(path.join(sb.outside, 'victim.txt'), path.join(sb.dest, 'x.txt'));
  const before = await snapshotOutsideDest(sb);
  assert.throws(
    () => unpack(sb, makeTar([{ path: 'x.txt', content: 'overwritten\n' }])),
    (err: unknown) => err instanceof StewardError && err.code === 'IO_ERROR' && /EEXIST/.test(err.message),
  );
  assert.deepEqual(await snapshotOutsideDest(sb), before);
  assert.equal(await fsp.readFile(path.join(sb.outside, 'victim.txt'), 'utf8'), 'victim\n');
});

test('a parent folder the writer did not make is never written into', async (t) => {
  const sb = await withDest(t);
  await fsp.symlink(sb.outside, path.join(sb.dest, 'lib'));
  const before = await snapshotOutsideDest(sb);
  assert.throws(
    () => unpack(sb, makeTar([{ path: 'lib/evil.js', content: 'x' }])),
    (err: unknown) => err instanceof StewardError && err.code === 'IO_ERROR' && /EEXIST/.test(err.message),
  );
  assert.deepEqual(await snapshotOutsideDest(sb), before);
});

test('files keep the archive mtime, folders do not, parents are made once, contents are exact', async (t) => {
  const sb = await withDest(t);
  unpack(
    sb,
    makeTar([
      { path: 'a/b/c/one.txt', content: 'one' },
      { path: 'a/b/', type: 'dir', mode: 0o700 },
      { path: 'a/b/c/two.txt', content: Buffer.alloc(70_000, 7), mode: 0o755 },
      { path: 'empty.txt', content: '' },
    ]),
  );
  // makeTar stamps every header with mtime 1,700,000,000.
  for (const rel of ['a/b/c/one.txt', 'a/b/c/two.txt', 'empty.txt']) {
    assert.equal((await fsp.stat(path.join(sb.dest, rel))).mtimeMs, 1_700_000_000_000, rel);
  }
  // a/b has an entry of its own, and nothing is created in it after that entry: a utimes at
  // the entry would have left the archive's mtime; the extraction sets no folder mtime.
  assert.notEqual((await fsp.stat(path.join(sb.dest, 'a/b'))).mtimeMs, 1_700_000_000_000);
  assert.equal(await fsp.readFile(path.join(sb.dest, 'a/b/c/one.txt'), 'utf8'), 'one');
  assert.deepEqual(await fsp.readFile(path.join(sb.dest, 'a/b/c/two.txt')), Buffer.alloc(70_000, 7));
  assert.equal((await fsp.stat(path.join(sb.dest, 'a/b/c/two.txt'))).mode & 0o111, 0o111);
  assert.equal((await fsp.stat(path.join(sb.dest, 'empty.txt'))).size, 0);
});

test('an archive cut inside a file body leaves no file descriptor open', async (t) => {
  const sb = await withDest(t);
  const fds = (): number => readdirSync('/proc/self/fd').length;
  const before = fds();
  const tar = makeTar([{ path: 'big.bin', content: Buffer.alloc(100_000, 1) }], { truncate: 512 + 50_000 });
  assert.throws(() => unpack(sb, tar), (err: unknown) => err instanceof StewardError && err.code === 'UNSAFE_ARCHIVE');
  assert.equal(fds(), before);
});
